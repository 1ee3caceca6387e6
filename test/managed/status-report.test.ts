import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { afterEach, describe, test } from 'node:test';
import { EXTERNAL_ID } from '../../src/managed/core/annotations.ts';
import { fingerprintDigest } from '../../src/managed/core/observed.ts';
import { captureLogs } from '../support/log-capture.ts';
import { until } from '../support/until.ts';
import { blockedBy, conditionOf, type Kind } from './fakes.ts';
import { type WidgetWorld, widgetWorld } from './world.ts';

// What a reconcile reports of the cloud object: status fields, conditions, events and fleet events, the
// details on their schedule. On the fakes: no apiserver, no simulator.

const KEY = 'ns-a/w';
let world: WidgetWorld | undefined;

afterEach(async () => {
  await world?.close();
  world = undefined;
});

function open(options?: Parameters<typeof widgetWorld>[0]): WidgetWorld {
  world = widgetWorld(options);
  return world;
}

const cond = (w: WidgetWorld, type: string, key = KEY) => conditionOf(w.api.get(key), type);
const statusOf = (w: WidgetWorld, key = KEY) => w.api.get(key)?.status ?? {};
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('status fields and conditions', () => {
  test('a running object reports Ready, Synced, its id, phase, fields, fingerprint and generation', async () => {
    const w = open();
    w.api.create('w', { size: 3 });
    await w.settle(KEY);
    const status = statusOf(w);
    const id = String(status.id);
    assert.equal(status.phase, 'RUNNING');
    assert.equal(status.size, 3);
    // The first 22 characters of the base64url SHA-256 of the watched fields.
    const digest = createHash('sha256').update('RUNNING/w/3').digest('base64url').slice(0, 22);
    assert.equal(status.cloudFingerprint, digest);
    assert.equal(fingerprintDigest('RUNNING/w/3'), digest);
    assert.equal(status.observedGeneration, 1);
    assert.equal(status.completionTime, undefined);
    assert.ok(w.cloud.objects.has(id));
    assert.deepEqual(
      status.conditions?.map(({ type, status, reason, message }) => ({ type, status, reason, message })),
      [
        { type: 'Ready', status: 'True', reason: 'Running', message: '' },
        { type: 'Synced', status: 'True', reason: 'ReconcileSuccess', message: '' },
      ],
    );
    assert.ok(typeof status.lastSyncTime === 'string');
  });

  test('an object not running is Ready=False with the reason and message of its readiness', async () => {
    const w = open();
    const paused = w.cloud.put({ name: 'p', status: 'PAUSED' });
    w.api.create('w', {}, { annotations: { [EXTERNAL_ID]: paused.id } });
    await w.settle(KEY);
    const ready = cond(w, 'Ready');
    assert.equal(ready?.status, 'False');
    assert.equal(ready?.reason, 'Paused');
    assert.equal(ready?.message, 'PAUSED');
    assert.equal(cond(w, 'Synced')?.status, 'True');
  });

  test('an unchanged observation writes no status, and lastSyncTime moves only with a write', async () => {
    const w = open();
    w.api.create('w', {});
    await w.settle(KEY);
    const before = statusOf(w);
    const writes = w.api.writes.length;
    await sleep(5);
    await w.reconcile(KEY);
    await w.reconcile(KEY);
    assert.equal(w.api.writes.length, writes, 'nothing written');
    assert.deepEqual(statusOf(w), before);
    // A change is written, with a new lastSyncTime and the transition time of what flipped only.
    const widget = w.cloud.objects.get(String(before.id));
    assert.ok(widget);
    widget.status = 'PAUSED';
    await sleep(30);
    await w.reconcile(KEY);
    const after = statusOf(w);
    assert.equal(w.api.writes.length, writes + 1);
    assert.notEqual(after.lastSyncTime, before.lastSyncTime);
    const synced = (s: typeof before) => s.conditions?.find((c) => c.type === 'Synced');
    const ready = (s: typeof before) => s.conditions?.find((c) => c.type === 'Ready');
    assert.equal(synced(after)?.lastTransitionTime, synced(before)?.lastTransitionTime);
    assert.notEqual(ready(after)?.lastTransitionTime, ready(before)?.lastTransitionTime);
  });

  test('a new generation is recorded as observed on the status and its conditions', async () => {
    const w = open();
    w.api.create('w', {});
    await w.settle(KEY);
    w.api.patchSpec(KEY, { recoveryPolicy: 'Never' });
    await w.settle(KEY);
    const status = statusOf(w);
    assert.equal(status.observedGeneration, 2);
    assert.deepEqual(
      status.conditions?.map((c) => c.observedGeneration),
      [2, 2],
    );
  });

  test('a broken object is said as a Warning when its phase changes, not on every reconcile', async () => {
    const w = open({
      adapt: (base) => ({
        ...base,
        observe: (mr, widget) => ({
          ...base.observe(mr, widget),
          ...(widget.status === 'FAILED' && {
            readiness: { ready: false, broken: true, reason: 'Crashed', message: 'the widget crashed' },
          }),
        }),
      }),
    });
    w.api.create('w', {});
    await w.settle(KEY);
    const widget = w.cloud.objects.get(String(statusOf(w).id));
    assert.ok(widget);
    widget.status = 'FAILED';
    await sleep(30);
    await w.reconcile(KEY);
    assert.equal(w.eventsOf(KEY).filter((event) => event.type === 'Warning').length, 1, 'said at the change');
    await w.reconcile(KEY);
    const warnings = w.eventsOf(KEY).filter((event) => event.type === 'Warning');
    assert.deepEqual(
      warnings.map((event) => [event.reason, event.message]),
      [['Crashed', 'the widget crashed']],
    );
    assert.equal(cond(w, 'Ready')?.reason, 'Crashed');
  });

  test('a broken object adopted with no status yet is said as a Warning', async () => {
    const w = open({
      adapt: (base) => ({
        ...base,
        observe: (mr, widget) => ({
          ...base.observe(mr, widget),
          readiness: { ready: false, broken: true, reason: 'Crashed', message: 'the widget crashed' },
        }),
      }),
    });
    const broken = w.cloud.put({ name: 'b', status: 'FAILED' });
    w.api.create('w', {}, { annotations: { [EXTERNAL_ID]: broken.id } });
    const { errors } = await w.settle(KEY);
    assert.deepEqual(errors, []);
    assert.deepEqual(
      w.eventsOf(KEY).map((event) => [event.type, event.reason]),
      [['Warning', 'Crashed']],
    );
  });

  test('an object not broken says no Warning when its phase changes', async () => {
    const w = open();
    w.api.create('w', {});
    await w.settle(KEY);
    const widget = w.cloud.objects.get(String(statusOf(w).id));
    assert.ok(widget);
    widget.status = 'FAILED';
    await sleep(30);
    await w.reconcile(KEY);
    assert.deepEqual(
      w.eventsOf(KEY).filter((event) => event.type === 'Warning'),
      [],
    );
  });

  test('a resource blocked on another is Ready=False with the blocker, Synced=True, and keeps its status', async () => {
    const w = open({
      adapt: blockedBy(() => ({ reason: 'WaitingForVolume', message: 'volume v is not ready' })),
    });
    w.api.create('w', {});
    w.api.setStatus(KEY, { note: 'kept' });
    const result = await w.reconcile(KEY);
    assert.ok((result.requeueAfterMs ?? 0) > 0);
    const ready = cond(w, 'Ready');
    assert.deepEqual(
      [ready?.status, ready?.reason, ready?.message],
      ['False', 'WaitingForVolume', 'volume v is not ready'],
    );
    const synced = cond(w, 'Synced');
    assert.deepEqual([synced?.status, synced?.reason, synced?.message], ['True', 'ReconcileSuccess', '']);
    assert.equal(statusOf(w).note, 'kept');
    assert.deepEqual(w.cloud.mutations(), []);
  });
});

describe('Ready, counted once', () => {
  test('becoming Ready is counted once per resource', async () => {
    const w = open();
    w.api.create('w', {});
    await w.settle(KEY);
    await w.reconcile(KEY);
    await w.reconcile(KEY);
    assert.deepEqual(
      w.recorded.fleet.filter((event) => event === 'ready'),
      ['ready'],
    );
  });

  test('a copy read before the Ready write does not count the resource again', async () => {
    const w = open();
    w.api.create('w', {});
    await w.settle(KEY);
    const obj = w.api.objects.get(KEY);
    assert.ok(obj?.status);
    obj.status.conditions = [];
    await w.reconcile(KEY);
    assert.deepEqual(w.recorded.fleet, ['ready']);
  });

  test('a restart finds the Ready condition among the others', async () => {
    const w = open();
    const running = w.cloud.put({ name: 'r' });
    w.api.create('w', {}, { annotations: { [EXTERNAL_ID]: running.id } });
    const at = new Date().toISOString();
    w.api.setStatus(KEY, {
      id: running.id,
      conditions: [
        { type: 'Synced', status: 'False', reason: 'CloudUnavailable', message: 'x', lastTransitionTime: at },
        { type: 'Ready', status: 'True', reason: 'Running', message: '', lastTransitionTime: at },
      ],
    });
    await w.settle(KEY);
    assert.deepEqual(w.recorded.fleet, []);
  });

  test('a resource already Ready when first seen (a restart) is not counted', async () => {
    const w = open();
    const running = w.cloud.put({ name: 'r' });
    w.api.create('w', {}, { annotations: { [EXTERNAL_ID]: running.id } });
    w.api.setStatus(KEY, {
      id: running.id,
      conditions: [
        {
          type: 'Ready',
          status: 'True',
          reason: 'Running',
          message: '',
          lastTransitionTime: new Date().toISOString(),
          observedGeneration: 1,
        },
      ],
    });
    await w.settle(KEY);
    assert.deepEqual(w.recorded.fleet, []);
  });

  test('a resource not Ready is not counted, and is counted when it becomes Ready', async () => {
    const w = open();
    const paused = w.cloud.put({ name: 'p', status: 'PAUSED' });
    w.api.create('w', {}, { annotations: { [EXTERNAL_ID]: paused.id } });
    await w.settle(KEY);
    assert.deepEqual(w.recorded.fleet, []);
    w.api.patchSpec(KEY, { paused: false });
    await w.settle(KEY);
    assert.deepEqual(w.recorded.fleet, ['ready']);
  });
});

describe('drift', () => {
  test('Drifted is said once per message: a new drift is said again', async () => {
    const w = open();
    w.api.create('w', { size: 1 });
    await w.settle(KEY);
    w.api.patchSpec(KEY, { size: 8 });
    await w.settle(KEY);
    await w.reconcile(KEY);
    const synced = cond(w, 'Synced');
    assert.equal(synced?.status, 'False');
    assert.equal(synced?.reason, 'Drifted');
    assert.equal(
      synced?.message,
      "the cloud Widget differs in size, which the cloud cannot change: set them to the cloud's values, or delete and recreate the resource to get what the spec asks",
    );
    assert.equal(w.eventsOf(KEY).filter((e) => e.reason === 'Drifted').length, 1);
    assert.deepEqual(
      w.recorded.fleet.filter((e) => e === 'drifted'),
      ['drifted'],
    );
    // Another message: said again.
    const multi = open({
      adapt: (base) => ({
        ...base,
        observe: (mr, widget) => ({
          ...base.observe(mr, widget),
          drift: mr.spec.size === 8 ? ['size'] : mr.spec.size === 9 ? ['size', 'spot'] : [],
        }),
      }),
    });
    multi.api.create('w', { size: 1 });
    await multi.settle(KEY);
    multi.api.patchSpec(KEY, { size: 8 });
    await multi.settle(KEY);
    multi.api.patchSpec(KEY, { size: 9 });
    await multi.settle(KEY);
    assert.match(cond(multi, 'Synced')?.message ?? '', /differs in size, spot,/);
    assert.equal(multi.eventsOf(KEY).filter((e) => e.reason === 'Drifted').length, 2);
    assert.equal(multi.recorded.fleet.filter((e) => e === 'drifted').length, 2);
    await w.close();
  });

  test('Drifted is said again after the drift was fixed and came back', async () => {
    const w = open();
    w.api.create('w', { size: 1 });
    await w.settle(KEY);
    w.api.patchSpec(KEY, { size: 8 });
    await w.settle(KEY);
    w.api.patchSpec(KEY, { size: 1 });
    await w.settle(KEY);
    assert.equal(cond(w, 'Synced')?.status, 'True');
    w.api.patchSpec(KEY, { size: 8 });
    await w.settle(KEY);
    assert.equal(w.eventsOf(KEY).filter((e) => e.reason === 'Drifted').length, 2);
  });

  test('policies that list Update report drift', async () => {
    const w = open();
    const outside = w.cloud.put({ name: 'o', size: 2 });
    w.api.create(
      'w',
      { size: 5, managementPolicies: ['Observe', 'Update'] },
      { annotations: { [EXTERNAL_ID]: outside.id } },
    );
    await w.settle(KEY);
    assert.equal(cond(w, 'Synced')?.reason, 'Drifted');
  });

  test('a kind that reports no drift is Synced', async () => {
    const w = open({
      adapt: (base) => ({ ...base, observe: (mr, widget) => ({ ...base.observe(mr, widget), drift: [] }) }),
    });
    w.api.create('w', { size: 1 });
    await w.settle(KEY);
    w.api.patchSpec(KEY, { size: 8 });
    await w.settle(KEY);
    assert.equal(cond(w, 'Synced')?.status, 'True');
    assert.ok(!w.recorded.fleet.includes('drifted'));
  });

  test('drift found on adoption, with a status that has no conditions yet, is said', async () => {
    const w = open();
    const outside = w.cloud.put({ name: 'o', size: 2 });
    w.api.create('w', { size: 5 }, { annotations: { [EXTERNAL_ID]: outside.id } });
    w.api.setStatus(KEY, { note: 'no conditions' });
    assert.deepEqual((await w.settle(KEY)).errors, []);
    assert.equal(cond(w, 'Synced')?.reason, 'Drifted');
    assert.deepEqual(
      w.eventsOf(KEY).map((event) => [event.type, event.reason]),
      [['Warning', 'Drifted']],
    );
    assert.equal(cond(w, 'Ready')?.status, 'True');
    assert.deepEqual(w.recorded.fleet, ['ready', 'drifted']);
    const fresh = open();
    const other = fresh.cloud.put({ name: 'o', size: 2 });
    fresh.api.create('w', { size: 5 }, { annotations: { [EXTERNAL_ID]: other.id } });
    assert.deepEqual((await fresh.settle(KEY)).errors, []);
    assert.deepEqual(
      fresh.eventsOf(KEY).map((event) => event.reason),
      ['Drifted'],
    );
    assert.equal(cond(fresh, 'Synced')?.reason, 'Drifted');
    assert.deepEqual(fresh.recorded.fleet, ['ready', 'drifted']);
    await w.close();
  });

  test('without Update in its policies a resource is never Drifted', async () => {
    const w = open();
    const outside = w.cloud.put({ name: 'o', size: 2 });
    w.api.create(
      'w',
      { size: 5, managementPolicies: ['Observe'] },
      { annotations: { [EXTERNAL_ID]: outside.id } },
    );
    await w.settle(KEY);
    assert.equal(cond(w, 'Synced')?.status, 'True');
    assert.ok(!w.recorded.fleet.includes('drifted'));
  });

  test('a preempted object is not Drifted: its Ready says why', async () => {
    const w = open();
    w.api.create('w', { spot: true, size: 1 });
    await w.settle(KEY);
    const widget = w.cloud.objects.get(String(statusOf(w).id));
    assert.ok(widget);
    widget.status = 'FAILED';
    w.api.patchSpec(KEY, { size: 8 });
    await w.settle(KEY, 3);
    assert.equal(cond(w, 'Synced')?.status, 'True');
    assert.equal(cond(w, 'Ready')?.reason, 'Preempted');
    assert.ok(!w.recorded.fleet.includes('drifted'));
  });
});

describe('preemption', () => {
  test('a preemption is said once, naming the object, the phase and what recovery does', async () => {
    const w = open();
    w.api.create('w', { spot: true });
    await w.settle(KEY);
    const id = String(statusOf(w).id);
    const widget = w.cloud.objects.get(id);
    assert.ok(widget);
    widget.status = 'FAILED';
    await sleep(30);
    await w.reconcile(KEY);
    await w.reconcile(KEY);
    const said = w.eventsOf(KEY).filter((event) => event.reason === 'Preempted');
    const message = 'the cloud took the spot capacity back (FAILED); recoveryPolicy Never leaves it down';
    assert.deepEqual(
      said.map((event) => [event.type, event.message]),
      [['Warning', `Widget ${id}: ${message}`]],
    );
    const ready = cond(w, 'Ready');
    assert.deepEqual([ready?.status, ready?.message], ['False', message]);
    assert.deepEqual(
      w.recorded.fleet.filter((event) => event === 'preempted'),
      ['preempted'],
    );
    assert.equal(statusOf(w).preemptions, 1);
    assert.ok(statusOf(w).lastPreemptionTime);
  });

  test('with recoveryPolicy Recreate the preemption says the object is replaced', async () => {
    const w = open();
    w.api.create('w', { spot: true, recoveryPolicy: 'Recreate' });
    await w.settle(KEY);
    const widget = w.cloud.objects.get(String(statusOf(w).id));
    assert.ok(widget);
    widget.status = 'FAILED';
    await sleep(30);
    await w.reconcile(KEY);
    assert.match(
      w.eventsOf(KEY).find((event) => event.reason === 'Preempted')?.message ?? '',
      /\(FAILED\); replacing it \(recoveryPolicy Recreate\)$/,
    );
  });
});

/** Widgets that finish: PAUSED is their success, FAILED their failure. */
const finite = (base: Kind): Kind => ({
  ...base,
  finite: {
    outcomeOf: (phase) => (phase === 'PAUSED' ? 'Complete' : phase === 'FAILED' ? 'Failed' : undefined),
  },
});

describe('finite objects', () => {
  test('a finished object gets its outcome condition and completion time, then is not read again', async () => {
    const w = open({ adapt: finite });
    const done = w.cloud.put({ name: 'd', status: 'FAILED' });
    w.api.create('w', {}, { annotations: { [EXTERNAL_ID]: done.id } });
    const before = Date.now();
    await w.reconcile(KEY);
    const status = statusOf(w);
    const outcome = cond(w, 'Failed');
    assert.deepEqual([outcome?.status, outcome?.reason, outcome?.message], ['True', 'NotRunning', 'FAILED']);
    assert.equal(cond(w, 'Complete'), undefined);
    assert.deepEqual(
      status.conditions?.map((c) => c.type),
      ['Failed', 'Ready', 'Synced'],
      'in code-unit order',
    );
    const completed = Date.parse(String(status.completionTime));
    assert.ok(completed >= before - 1000 && completed <= Date.now());
    // The cloud says otherwise now, and a list has shown it: a finished resource does not look.
    const stored = w.cloud.objects.get(done.id);
    assert.ok(stored);
    stored.status = 'RUNNING';
    const lists = w.cloud.calls.filter((c) => c.op === 'list').length;
    await until(
      () => w.cloud.calls.filter((c) => c.op === 'list').length > lists + 1,
      'a list after the change',
    );
    const writes = w.api.writes.length;
    await w.reconcile(KEY);
    assert.equal(statusOf(w).phase, 'FAILED', 'not read again');
    assert.equal(w.api.writes.length, writes, 'nothing written');
  });

  test('a finished object with ttlSecondsAfterFinished 0 is deleted once finished', async () => {
    const w = open({ adapt: finite });
    const done = w.cloud.put({ name: 'd', status: 'PAUSED' });
    w.api.create('w', { ttlSecondsAfterFinished: 0 }, { annotations: { [EXTERNAL_ID]: done.id } });
    await w.reconcile(KEY);
    assert.ok(w.api.get(KEY)?.metadata.deletionTimestamp, 'its deletion started');
  });

  test('a finished object with a time to live is looked at again when it runs out', async () => {
    const w = open({ adapt: finite });
    const done = w.cloud.put({ name: 'd', status: 'PAUSED' });
    w.api.create('w', { ttlSecondsAfterFinished: 60 }, { annotations: { [EXTERNAL_ID]: done.id } });
    const result = await w.reconcile(KEY);
    assert.equal(cond(w, 'Complete')?.status, 'True');
    assert.ok((result.requeueAfterMs ?? 0) > 59_000 && (result.requeueAfterMs ?? 0) <= 60_000);
  });

  test('an object of a finite kind still running has no outcome and no completion time', async () => {
    const w = open({ adapt: finite });
    w.api.create('w', {});
    await w.settle(KEY);
    assert.equal(statusOf(w).completionTime, undefined);
    assert.deepEqual(
      statusOf(w).conditions?.map((c) => c.type),
      ['Ready', 'Synced'],
    );
  });
});

describe("the list's view", () => {
  /** Widgets whose list leaves out `host`, which only a get (enrich) shows. */
  const enriched = (base: Kind, cloud: { calls: Array<{ op: string; id?: string | undefined }> }): Kind => ({
    ...base,
    list: async () => (await base.list()).map((widget) => ({ ...widget, host: undefined })),
    enrich: async (widget) => {
      cloud.calls.push({ op: 'enrich', id: widget.id });
      return { ...widget, host: `host-${widget.id}` } as typeof widget;
    },
    observe: (mr, widget) => ({
      ...base.observe(mr, widget),
      status: { size: widget.size, host: (widget as { host?: string }).host },
    }),
  });

  test('with the status fingerprint the list is trusted: no get, and what only a get shows is kept', async () => {
    const w = open({ adapt: enriched });
    const outside = w.cloud.put({ name: 'o' });
    w.api.create('w', {}, { annotations: { [EXTERNAL_ID]: outside.id } });
    w.api.setStatus(KEY, {
      id: outside.id,
      host: 'remembered',
      size: 7,
      lateInitialized: [],
      cloudFingerprint: fingerprintDigest('RUNNING/o/1'),
    });
    await w.settle(KEY);
    assert.deepEqual(
      w.cloud.calls.filter((call) => call.op !== 'list'),
      [],
      'neither a get nor an enrich',
    );
    assert.equal(statusOf(w).host, 'remembered', 'kept from status');
    assert.equal(statusOf(w).size, 1, 'what the list shows is taken from it');
  });

  test('with another fingerprint in status the object is completed', async () => {
    const w = open({ adapt: enriched });
    const outside = w.cloud.put({ name: 'o' });
    w.api.create('w', {}, { annotations: { [EXTERNAL_ID]: outside.id } });
    w.api.setStatus(KEY, {
      id: outside.id,
      host: 'remembered',
      note: 'stale',
      lateInitialized: [],
      cloudFingerprint: fingerprintDigest('PAUSED/o/1'),
    });
    await w.settle(KEY);
    assert.equal(statusOf(w).host, `host-${outside.id}`);
    assert.ok(w.cloud.calls.some((call) => call.op === 'enrich'));
    assert.equal(statusOf(w).note, undefined, 'the completed view is whole: nothing carried from status');
  });

  test("with the fingerprint of another id in status, the list's view is not trusted", async () => {
    const w = open({ adapt: enriched });
    const outside = w.cloud.put({ name: 'o' });
    w.api.create('w', {}, { annotations: { [EXTERNAL_ID]: outside.id } });
    w.api.setStatus(KEY, {
      id: 'elsewhere',
      host: 'remembered',
      cloudFingerprint: fingerprintDigest('RUNNING/o/1'),
    });
    await w.settle(KEY);
    assert.equal(statusOf(w).host, `host-${outside.id}`);
  });

  test('after a step, a listed copy from before it is not trusted: the object is read again', async () => {
    // Lists only when asked: no list comes between the step and the next reconcile.
    const w = open({ pollIntervalMs: 60_000 });
    w.api.create('w', {});
    await w.settle(KEY);
    const id = String(statusOf(w).id);
    // The cache's times are milliseconds: the step comes in a later one than the last list.
    await sleep(5);
    w.api.patchSpec(KEY, { paused: true });
    await w.reconcile(KEY);
    assert.deepEqual(w.cloud.mutations(id).at(-1)?.op, 'pause');
    await w.reconcile(KEY);
    assert.equal(statusOf(w).phase, 'PAUSED');
    assert.deepEqual(
      w.cloud.mutations(id).map((call) => call.op),
      ['pause'],
      'not paused twice',
    );
  });

  test('a kind with nothing to complete takes the listed copy as whole', async () => {
    const w = open({
      adapt: (base) => ({
        ...base,
        observe: (mr, widget) => ({
          ...base.observe(mr, widget),
          status: { size: widget.size, note: undefined },
        }),
      }),
    });
    const outside = w.cloud.put({ name: 'o' });
    w.api.create('w', {}, { annotations: { [EXTERNAL_ID]: outside.id } });
    w.api.setStatus(KEY, {
      id: outside.id,
      note: 'stale',
      lateInitialized: [],
      cloudFingerprint: fingerprintDigest('RUNNING/o/1'),
    });
    await w.settle(KEY);
    assert.equal(statusOf(w).note, undefined, 'not carried: the view is whole');
    assert.deepEqual(
      w.cloud.calls.filter((call) => call.op === 'get'),
      [],
    );
  });
});

describe('details', () => {
  /** Widgets with a runtime fetched on the details schedule, for running widgets only. */
  const detailed =
    (fetch: () => Promise<Record<string, unknown>>) =>
    (base: Kind, cloud: { calls: Array<{ op: string; id?: string | undefined }> }): Kind => ({
      ...base,
      details: {
        calls: 1,
        fields: ['runtime', 'gpuUtil'],
        applies: (widget) => widget.status === 'RUNNING',
        fetch: async (widget) => {
          cloud.calls.push({ op: 'details', id: widget.id });
          return fetch();
        },
      },
    });

  test('details are fetched when due and written to status; between fetches the last values stand', async () => {
    let runtime = 10;
    const w = open({ adapt: detailed(async () => ({ runtime: runtime++ })) });
    w.api.create('w', {});
    assert.deepEqual((await w.settle(KEY)).errors, []);
    assert.equal(statusOf(w).runtime, undefined, 'not yet due');
    await sleep(300);
    assert.deepEqual(w.woken, [KEY], 'the schedule wakes the resource');
    await w.reconcile(KEY);
    assert.equal(statusOf(w).runtime, 10);
    await w.reconcile(KEY);
    assert.equal(statusOf(w).runtime, 10, 'the last values, no second fetch');
    assert.equal(w.cloud.calls.filter((call) => call.op === 'details').length, 1);
  });

  test('a failed fetch keeps the last values and fails nothing', async () => {
    const logs = captureLogs();
    const w = open({
      log: logs.logger,
      adapt: detailed(async () => {
        throw new Error('metrics down');
      }),
    });
    w.api.create('w', {});
    await w.settle(KEY);
    await sleep(300);
    await w.reconcile(KEY);
    assert.equal(cond(w, 'Synced')?.status, 'True');
    assert.equal(statusOf(w).runtime, undefined);
    const line = logs.lines.find((entry) => entry.msg === 'fetching details failed; keeping the last values');
    assert.ok(line, 'the failure is logged');
    assert.equal(line.level, 'warn');
    assert.equal(line.resource, KEY);
    assert.equal((line.err as { message?: string }).message, 'metrics down');
  });

  test('details in status (a restart) are carried over until their turn, not fetched at once', async (t) => {
    // Their turn is at a random point of the interval (a restart spends the budget evenly): the middle
    // here, so that no draw puts it inside the test.
    t.mock.method(Math, 'random', () => 0.5);
    const w = open({ adapt: detailed(async () => ({ runtime: 99 })) });
    const outside = w.cloud.put({ name: 'o' });
    w.api.create('w', {}, { annotations: { [EXTERNAL_ID]: outside.id } });
    w.api.setStatus(KEY, { id: outside.id, runtime: 5, other: 'x' });
    await w.settle(KEY);
    await sleep(300);
    await w.reconcile(KEY);
    assert.equal(statusOf(w).runtime, 5);
    assert.equal(statusOf(w).gpuUtil, undefined, 'a field not in status is not made up');
    assert.deepEqual(
      w.cloud.calls.filter((call) => call.op === 'details'),
      [],
    );
  });

  test('an object details do not apply to is not fetched, and keeps what status has', async () => {
    const w = open({ adapt: detailed(async () => ({ runtime: 99 })) });
    const paused = w.cloud.put({ name: 'p', status: 'PAUSED' });
    w.api.create('w', {}, { annotations: { [EXTERNAL_ID]: paused.id } });
    w.api.setStatus(KEY, { id: paused.id, runtime: 5 });
    await w.settle(KEY);
    await sleep(300);
    await w.reconcile(KEY);
    assert.deepEqual(w.woken, []);
    assert.equal(statusOf(w).runtime, 5);
    assert.deepEqual(
      w.cloud.calls.filter((call) => call.op === 'details'),
      [],
    );
  });

  test('a resource with no status and details that do not apply reports none', async () => {
    const w = open({ adapt: detailed(async () => ({ runtime: 99 })) });
    const paused = w.cloud.put({ name: 'p', status: 'PAUSED' });
    w.api.create('w', {}, { annotations: { [EXTERNAL_ID]: paused.id } });
    assert.deepEqual((await w.settle(KEY)).errors, []);
    await sleep(300);
    await w.reconcile(KEY);
    assert.equal('runtime' in statusOf(w), false);
    assert.deepEqual(w.woken, [], 'never scheduled');
    assert.deepEqual(
      w.cloud.calls.filter((call) => call.op === 'details'),
      [],
    );
  });
});

describe('connection Secret', () => {
  test('a kind without connection details writes no Secret', async () => {
    const w = open({ adapt: (base) => ({ ...base, secrets: undefined }) });
    w.api.create('w', { writeConnectionSecretToRef: { name: 'conn' } });
    await w.settle(KEY);
    assert.equal(w.api.secrets.size, 0);
    assert.equal(cond(w, 'Synced')?.status, 'True');
  });

  test('a refused Secret is Synced=False with its reason and a Warning, and asks to look again later', async () => {
    const w = open();
    w.api.secrets.set('ns-a/taken', { data: { a: 'b' } });
    w.api.create('w', { writeConnectionSecretToRef: { name: 'taken' } });
    await w.settle(KEY);
    const result = await w.reconcile(KEY);
    assert.ok((result.requeueAfterMs ?? 0) >= 10_000);
    const synced = cond(w, 'Synced');
    assert.equal(synced?.status, 'False');
    assert.equal(synced?.reason, 'ConnectionSecretNotOwned');
    const warning = w.eventsOf(KEY).find((event) => event.reason === 'ConnectionSecretNotOwned');
    assert.equal(warning?.type, 'Warning');
    assert.equal(warning?.message, synced?.message);
  });

  test('a refused Secret on a resource whose status has no conditions is said once', async () => {
    const w = open();
    w.api.secrets.set('ns-a/taken', { data: { a: 'b' } });
    const outside = w.cloud.put({ name: 'o' });
    w.api.create(
      'w',
      { writeConnectionSecretToRef: { name: 'taken' } },
      { annotations: { [EXTERNAL_ID]: outside.id } },
    );
    w.api.setStatus(KEY, { note: 'no conditions' });
    assert.deepEqual((await w.settle(KEY)).errors, []);
    assert.deepEqual(
      w.eventsOf(KEY).map((event) => event.reason),
      ['ConnectionSecretNotOwned'],
    );
  });

  test('a resource that writes its Secret asks for nothing more', async () => {
    const w = open();
    w.api.create('w', { writeConnectionSecretToRef: { name: 'mine' } });
    await w.settle(KEY);
    assert.deepEqual(await w.reconcile(KEY), {});
  });
});
