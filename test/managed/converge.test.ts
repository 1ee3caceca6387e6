import assert from 'node:assert/strict';
import { afterEach, describe, test } from 'node:test';
import { pino } from 'pino';
import {
  CREATE_INTENT,
  CREATE_NAME,
  EXTERNAL_ID,
  FINALIZER,
  OWNER_ENV,
} from '../../src/managed/core/annotations.ts';
import { ReconcileError } from '../../src/managed/core/errors.ts';
import type { ManagedObject } from '../../src/managed/core/external-kind.ts';
import type { ManagedStatus } from '../../src/managed/core/status-schema.ts';
import { sealIntent } from '../../src/managed/creation/creation.ts';
import { expireFinished, finishedAt } from '../../src/managed/lifecycle/time-to-live.ts';
import { MovableClock } from '../support/clock.ts';
import { until } from '../support/until.ts';
import { blockedBy, conditionOf, FakeApi, type Kind, type WidgetSpec } from './fakes.ts';
import { type WidgetWorld, widgetWorld } from './world.ts';

// The order of one reconcile of a living resource: what it returns (when to look again), the steps it
// takes and the calls it makes; and the time to live of a finished resource.

const KEY = 'ns-a/w';
const AT = { namespace: 'ns-a', name: 'w' };
let world: WidgetWorld;

afterEach(async () => world?.close());

function open(options?: Parameters<typeof widgetWorld>[0]): WidgetWorld {
  world = widgetWorld(options);
  return world;
}

/** Widgets that finish: PAUSED is Complete, FAILED is Failed. */
const finite = (kind: Kind): Kind => ({
  ...kind,
  finite: {
    outcomeOf: (phase) => (phase === 'PAUSED' ? 'Complete' : phase === 'FAILED' ? 'Failed' : undefined),
  },
});

/** The create intent the operator writes before a create, dated `at`. */
function intent(uid: string, at: number) {
  return { [CREATE_INTENT]: `${at}.${sealIntent('signing-key', uid, at, 'w')}`, [CREATE_NAME]: 'w' };
}

const synced = (w: WidgetWorld, key = KEY) => conditionOf(w.api.get(key), 'Synced');
const ready = (w: WidgetWorld, key = KEY) => conditionOf(w.api.get(key), 'Ready');
const creates = (w: WidgetWorld) => w.cloud.calls.filter((call) => call.op === 'create').length;

describe('one reconcile of a living resource', () => {
  test('in sync, it asks to look again only when its kind revisits', async () => {
    const w = open({
      adapt: (kind) => ({ ...kind, revisit: { afterMs: (mr) => (mr.spec.size === 3 ? 1234 : undefined) } }),
    });
    w.api.create('w', {});
    await w.settle(KEY);
    assert.deepEqual(await w.reconciler.reconcile(AT), {});
    w.api.patchSpec(KEY, { size: 3 });
    assert.deepEqual(await w.reconciler.reconcile(AT), { requeueAfterMs: 1234 });
  });

  test('after a step it looks again soon, saying what it did', async () => {
    const w = open();
    w.api.create('w', {});
    await w.settle(KEY);
    const id = String(w.api.get(KEY)?.status?.id);
    w.api.patchSpec(KEY, { paused: true });
    assert.deepEqual(await w.reconciler.reconcile(AT), { requeueAfterMs: 20 });
    const event = w.recorded.events.at(-1);
    assert.deepEqual(event, { key: KEY, type: 'Normal', reason: 'Pausing', message: `pausing widget ${id}` });
    assert.equal(w.cloud.objects.get(id)?.status, 'PAUSED');
  });

  test('without the Update policy no step is planned', async () => {
    const w = open();
    w.api.create('w', { managementPolicies: ['Observe', 'Create', 'Delete', 'LateInitialize'] });
    await w.settle(KEY);
    const id = String(w.api.get(KEY)?.status?.id);
    w.api.patchSpec(KEY, { paused: true });
    assert.deepEqual(await w.reconciler.reconcile(AT), {});
    assert.deepEqual(w.cloud.mutations(id), []);
  });

  test('a refused connection Secret is looked at again in 30 s', async () => {
    const w = open();
    w.api.secrets.set('ns-a/taken', { data: {}, owner: 'someone' });
    w.api.create('w', { writeConnectionSecretToRef: { name: 'taken' } });
    await w.settle(KEY, 2);
    assert.deepEqual(await w.reconciler.reconcile(AT), { requeueAfterMs: 30_000 });
  });

  test('a resource its kind says is blocked waits, reported, with no cloud call', async () => {
    let blocked = true;
    const w = open({
      adapt: blockedBy(() =>
        blocked ? { reason: 'WaitingForVolume', message: 'volume v is not ready' } : undefined,
      ),
    });
    w.api.create('w', {});
    assert.deepEqual(await w.reconciler.reconcile(AT), { requeueAfterMs: 10_000 });
    assert.equal(ready(w)?.reason, 'WaitingForVolume');
    assert.equal(ready(w)?.message, 'volume v is not ready');
    assert.equal(synced(w)?.status, 'True');
    assert.equal(creates(w), 0);
    blocked = false;
    await w.settle(KEY);
    assert.equal(creates(w), 1);
  });

  test('a named resource is not held up by its kind’s blocker', async () => {
    const w = open({ adapt: blockedBy(() => ({ reason: 'WaitingForVolume', message: 'no' })) });
    const outside = w.cloud.put({ name: 'w' });
    w.api.create('w', {}, { annotations: { [EXTERNAL_ID]: outside.id } });
    await w.settle(KEY);
    assert.equal(ready(w)?.reason, 'Running');
    assert.deepEqual(w.api.get(KEY)?.metadata.finalizers, [FINALIZER]);
  });

  test('a preempted resource waits out its backoff before its replacement, with no cloud call', async () => {
    const w = open();
    w.api.create('w', { spot: true, recoveryPolicy: 'Recreate' });
    await w.settle(KEY);
    const id = String(w.api.get(KEY)?.status?.id);
    const widget = w.cloud.objects.get(id);
    assert.ok(widget);
    widget.status = 'FAILED';
    await w.settle(KEY, 3);
    const calls = w.cloud.calls.length;
    const result = await w.reconciler.reconcile(AT);
    assert.ok(
      result.requeueAfterMs !== undefined && result.requeueAfterMs > 9_000 && result.requeueAfterMs <= 10_000,
      JSON.stringify(result),
    );
    assert.equal(w.cloud.calls.length, calls);
    w.clock.advance(result.requeueAfterMs);
    await w.settle(KEY);
    assert.equal(w.cloud.calls.filter((call) => call.op === 'create').length, 2, 'replaced once it is over');
    assert.notEqual(w.api.get(KEY)?.status?.id, id);
  });

  test('a named resource gets its finalizer; one that already has it gets no second write', async () => {
    const w = open();
    const outside = w.cloud.put({ name: 'w' });
    w.api.create(
      'w',
      { managementPolicies: ['Observe', 'Update', 'Delete'] },
      { annotations: { [EXTERNAL_ID]: outside.id }, finalizers: ['someone/else'] },
    );
    await w.settle(KEY);
    assert.deepEqual(w.api.get(KEY)?.metadata.finalizers, ['someone/else', FINALIZER]);
    const writes = w.api.writes.filter((write) => write.what.includes('finalizers')).length;
    await w.settle(KEY);
    assert.equal(w.api.writes.filter((write) => write.what.includes('finalizers')).length, writes);
  });

  test('a resource the cache cannot read is left alone', async () => {
    const w = open();
    w.api.create('w', {});
    w.api.store.get = () => {
      throw new Error('malformed');
    };
    assert.deepEqual(await w.reconciler.reconcile(AT), {});
    assert.deepEqual(w.cloud.calls, []);
  });

  test('a resource not in the cache is nothing to do', async () => {
    const w = open();
    assert.deepEqual(await w.reconciler.reconcile(AT), {});
    assert.deepEqual(w.cloud.calls, []);
  });

  test('an invalid spec is a terminal InvalidSpec, not retried until it changes', async () => {
    const w = open();
    w.api.create('w', { size: 'big' });
    const { errors } = await w.settle(KEY, { expect: ['InvalidSpec'] });
    assert.equal(errors.at(-1)?.name, 'TerminalError');
    assert.equal(synced(w)?.reason, 'InvalidSpec');
    const writes = w.api.writes.length;
    assert.deepEqual(await w.reconciler.reconcile(AT), {});
    assert.equal(w.api.writes.length, writes, 'held: no second report');
    w.api.patchSpec(KEY, { size: 2 });
    await w.settle(KEY, { expect: ['InvalidSpec'] });
    assert.equal(synced(w)?.status, 'True');
  });

  test('the owner marker and Secret values reach the kind; a value its failure echoes is redacted', async () => {
    const markers: string[] = [];
    const w = open({
      adapt: (kind) => ({
        ...kind,
        create: async (_mr, ctx) => {
          markers.push(`${ctx.ownerMarker.key}=${ctx.ownerMarker.value}`);
          const env = await ctx.resolveEnv([
            { key: 'P', valueFrom: { secretKeyRef: { name: 'db', key: 'password' } } },
          ]);
          throw new ReconcileError('CloudRejected', `bad env ${env.map((item) => item.value).join()}`, {
            terminal: true,
          });
        },
      }),
    });
    w.api.secrets.set('ns-a/db', { data: { password: 'hunter2' } });
    const obj = w.api.create('w', {});
    await w.settle(KEY, { expect: ['CloudRejected'] });
    assert.equal(markers[0], `${OWNER_ENV}=${obj.metadata.uid}`);
    assert.equal(synced(w)?.message, 'bad env [redacted]');
    assert.ok(!JSON.stringify(w.recorded.events).includes('hunter2'));
  });
});

describe('a resource with an interrupted create', () => {
  test('gets the finalizer before its object is taken over, added to any others', async () => {
    const w = open();
    const obj = w.api.create('w', {}, { finalizers: ['someone/else'] });
    const at = Date.now() - 5_000;
    w.api.annotate(KEY, intent(obj.metadata.uid, at));
    const found = w.cloud.put({ name: 'w', marker: obj.metadata.uid, createdAt: at + 10 });
    const { errors } = await w.settle(KEY);
    assert.deepEqual(errors, []);
    assert.deepEqual(w.api.get(KEY)?.metadata.finalizers, ['someone/else', FINALIZER]);
    assert.equal(w.api.get(KEY)?.status?.id, found.id);
    assert.equal(creates(w), 0);
  });

  test('without any finalizer gets exactly the operator’s', async () => {
    const w = open();
    const obj = w.api.create('w', {});
    const at = Date.now() - 5_000;
    w.api.annotate(KEY, intent(obj.metadata.uid, at));
    w.cloud.put({ name: 'w', marker: obj.metadata.uid, createdAt: at + 10 });
    const { errors } = await w.settle(KEY);
    assert.deepEqual(errors, []);
    assert.deepEqual(w.api.get(KEY)?.metadata.finalizers, [FINALIZER]);
    assert.equal(ready(w)?.status, 'True');
  });

  test('that holds the finalizer gets no second one', async () => {
    const w = open();
    const obj = w.api.create('w', {}, { finalizers: [FINALIZER] });
    const at = Date.now() - 5_000;
    w.api.annotate(KEY, intent(obj.metadata.uid, at));
    w.cloud.put({ name: 'w', marker: obj.metadata.uid, createdAt: at + 10 });
    await w.settle(KEY);
    assert.deepEqual(w.api.get(KEY)?.metadata.finalizers, [FINALIZER]);
    assert.deepEqual(
      w.api.writes.filter((write) => write.what.includes('finalizers')),
      [],
    );
  });

  test('so recent that a list cannot yet show what it made waits, with no create', async () => {
    const w = open();
    const obj = w.api.create('w', {}, { finalizers: [FINALIZER] });
    w.api.annotate(KEY, intent(obj.metadata.uid, Date.now() + 300));
    const result = await w.reconciler.reconcile(AT);
    assert.ok(result.requeueAfterMs !== undefined && result.requeueAfterMs > 0, JSON.stringify(result));
    assert.equal(creates(w), 0);
    assert.equal(w.api.get(KEY)?.status, undefined);
  });
});

describe('kinds and policies', () => {
  test('a kind without spot capacity is never preempted', async () => {
    const w = open({ adapt: ({ spot: _spot, ...kind }) => kind });
    w.api.create('w', { spot: true, recoveryPolicy: 'Recreate' });
    await w.settle(KEY);
    const id = String(w.api.get(KEY)?.status?.id);
    const widget = w.cloud.objects.get(id);
    assert.ok(widget);
    widget.status = 'FAILED';
    await new Promise((resolve) => setTimeout(resolve, 100));
    const { errors } = await w.settle(KEY);
    assert.deepEqual(errors, []);
    assert.equal(ready(w)?.reason, 'NotRunning');
    assert.deepEqual(w.cloud.mutations(id), []);
    assert.equal(w.api.get(KEY)?.status?.preemptions, undefined);
  });

  test('the Update policy named among others lets steps run', async () => {
    const w = open();
    w.api.create('w', { managementPolicies: ['Observe', 'Create', 'Update', 'Delete'] });
    await w.settle(KEY);
    const id = String(w.api.get(KEY)?.status?.id);
    w.api.patchSpec(KEY, { paused: true });
    await w.settle(KEY);
    assert.deepEqual(
      w.cloud.mutations(id).map((call) => call.op),
      ['pause'],
    );
  });

  test('a step is taken once: the next reconcile does not trust a list from before it', async () => {
    const w = open();
    w.api.create('w', {});
    await w.settle(KEY);
    const id = String(w.api.get(KEY)?.status?.id);
    await new Promise((resolve) => setTimeout(resolve, 100));
    w.api.patchSpec(KEY, { paused: true });
    await w.reconciler.reconcile(AT);
    await w.reconciler.reconcile(AT);
    await w.reconciler.reconcile(AT);
    assert.deepEqual(
      w.cloud.mutations(id).map((call) => call.op),
      ['pause'],
    );
  });
});

describe('a vanished resource of a namespace the account refuses', () => {
  test('is forgotten, and its successor reconciled next', async () => {
    const w = open({ policy: { allowsNamespace: (namespace) => namespace !== 'ns-a' } });
    w.api.create('w', {}, { finalizers: [FINALIZER] });
    w.reconciler.vanished(w.api.vanish(KEY), true);
    w.api.create('w', {});
    assert.deepEqual(await w.reconciler.reconcile(AT), { requeue: true });
    assert.deepEqual(w.cloud.calls, []);
  });
});

describe('a finished resource', () => {
  test('is never read from the cloud again, and looked at when its time to live ends', async () => {
    const w = open({ adapt: finite });
    w.api.create('w', { ttlSecondsAfterFinished: 3600 });
    await w.settle(KEY);
    const id = String(w.api.get(KEY)?.status?.id);
    const widget = w.cloud.objects.get(id);
    assert.ok(widget);
    widget.status = 'PAUSED';
    await new Promise((resolve) => setTimeout(resolve, 100));
    await w.settle(KEY, 3);
    assert.equal(conditionOf(w.api.get(KEY), 'Complete')?.status, 'True');
    // The cloud says otherwise now, and a list has shown it: a finished resource does not look.
    widget.status = 'RUNNING';
    const lists = w.cloud.calls.filter((call) => call.op === 'list').length;
    await until(
      () => w.cloud.calls.filter((call) => call.op === 'list').length > lists + 1,
      'a list after it',
    );
    const writes = w.api.writes.length;
    const result = await w.reconciler.reconcile(AT);
    assert.ok(
      result.requeueAfterMs !== undefined &&
        result.requeueAfterMs > 3_590_000 &&
        result.requeueAfterMs <= 3_600_000,
      JSON.stringify(result),
    );
    assert.equal(w.api.get(KEY)?.status?.phase, 'PAUSED', 'never read from the cloud again');
    assert.equal(w.api.writes.length, writes, 'nothing written');
    assert.ok(w.api.get(KEY));
    w.clock.advance(3_590_000);
    await w.reconciler.reconcile(AT);
    assert.equal(w.api.get(KEY)?.metadata.deletionTimestamp, undefined, 'kept until its time to live ends');
    w.clock.advance(10_000);
    await w.reconciler.reconcile(AT);
    assert.ok(w.api.get(KEY)?.metadata.deletionTimestamp, 'deleted once it has');
  });

  test('past its time to live is deleted; when deleted, its deletion runs as any other', async () => {
    const w = open({ adapt: finite });
    w.api.create('w', { ttlSecondsAfterFinished: 0 });
    await w.settle(KEY);
    const id = String(w.api.get(KEY)?.status?.id);
    const widget = w.cloud.objects.get(id);
    assert.ok(widget);
    widget.status = 'FAILED';
    await new Promise((resolve) => setTimeout(resolve, 100));
    await w.settle(KEY, 3);
    await w.settle(KEY);
    assert.equal(w.api.get(KEY), undefined);
    assert.ok(w.reasonsOf(KEY).includes('Deleting'), 'its object deleted with it');
    assert.equal(w.cloud.objects.get(id)?.status, 'TERMINATED');
  });
});

const statusWith = (conditions: Array<[string, string]>, completionTime?: string): ManagedStatus => ({
  conditions: conditions.map(([type, status]) => ({
    type,
    status: status as 'True' | 'False',
    reason: 'R',
    message: '',
    lastTransitionTime: '',
  })),
  ...(completionTime && { completionTime }),
});

describe('finishedAt', () => {
  const NOW = Date.parse('2026-03-01T00:00:00.000Z');

  test('is the completion time of a Complete or Failed resource', () => {
    const at = '2026-01-02T03:04:05.000Z';
    assert.equal(finishedAt(statusWith([['Complete', 'True']], at), NOW), Date.parse(at));
    const failed = statusWith(
      [
        ['Ready', 'False'],
        ['Failed', 'True'],
      ],
      at,
    );
    assert.equal(finishedAt(failed, NOW), Date.parse(at));
  });

  test('is now when the completion time is missing or unreadable', () => {
    for (const status of [statusWith([['Complete', 'True']]), statusWith([['Failed', 'True']], 'soon')]) {
      assert.equal(finishedAt(status, NOW), NOW);
    }
  });

  test('is undefined until an outcome is True', () => {
    const at = '2026-01-02T03:04:05.000Z';
    const pending = statusWith(
      [
        ['Complete', 'False'],
        ['Failed', 'False'],
      ],
      at,
    );
    assert.equal(finishedAt(pending, NOW), undefined);
    assert.equal(finishedAt(statusWith([['Ready', 'True']], at), NOW), undefined);
    assert.equal(finishedAt({ completionTime: at }, NOW), undefined);
    assert.equal(finishedAt(undefined, NOW), undefined);
  });
});

describe('expireFinished', () => {
  const log = pino({ level: 'silent' });
  const finishedResource = (api: FakeApi, ttl: number | undefined): ManagedObject<WidgetSpec> => {
    const obj = api.create('w', ttl === undefined ? {} : { ttlSecondsAfterFinished: ttl });
    return { ...obj, spec: { ttlSecondsAfterFinished: ttl } };
  };

  test('keeps a resource without a time to live', async () => {
    const api = new FakeApi();
    const clock = new MovableClock();
    const mr = finishedResource(api, undefined);
    clock.advance(365 * 86_400_000);
    assert.deepEqual(await expireFinished({ writer: api.writer, log, clock }, mr, 0), {});
    assert.ok(api.get(KEY));
  });

  test('looks again exactly when the time to live ends, and deletes it then', async () => {
    const api = new FakeApi();
    const T = Date.parse('2026-03-01T00:00:00.000Z');
    const clock = { now: () => T };
    const mr = finishedResource(api, 10);
    const o = { writer: api.writer, log, clock };
    assert.deepEqual(await expireFinished(o, mr, T - 4_000), { requeueAfterMs: 6_000 });
    assert.deepEqual(await expireFinished(o, mr, T - 9_999), { requeueAfterMs: 1 });
    assert.ok(api.get(KEY), 'kept until the time to live has passed');
    assert.deepEqual(await expireFinished(o, mr, T - 10_000), {});
    assert.equal(api.get(KEY), undefined);
  });

  test('a resource with no time to live left is deleted at once', async () => {
    const api = new FakeApi();
    const clock = new MovableClock();
    const exact = finishedResource(api, 0);
    assert.deepEqual(await expireFinished({ writer: api.writer, log, clock }, exact, clock.now()), {});
    assert.equal(api.get(KEY), undefined);
  });
});
