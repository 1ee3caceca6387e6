import assert from 'node:assert/strict';
import { afterEach, describe, test } from 'node:test';
import { EXTERNAL_ID } from '../../src/managed/core/annotations.ts';
import { readyReason } from '../../src/managed/core/conditions.ts';
import type { CommonSpec, ManagedObject } from '../../src/managed/core/external-kind.ts';
import type { ManagedStatus } from '../../src/managed/core/status-schema.ts';
import {
  countPreemption,
  recreateBackoff,
  recreates,
  spotStatus,
} from '../../src/managed/lifecycle/recovery.ts';
import { conditionOf, FakeCloud } from './fakes.ts';
import { type WidgetWorld, widgetWorld } from './world.ts';

// A lost object while its resource lives: finite and failed, preempted and counted once, or made again;
// and the backoff before a preempted resource's replacement.

const KEY = 'ns-a/w';
let world: WidgetWorld;

afterEach(async () => world?.close());

function open(): WidgetWorld {
  world = widgetWorld();
  return world;
}

/** Makes the world's widgets finite (a widget FAILED or TERMINATED has finished), before its first reconcile. */
function finite(w: WidgetWorld): void {
  const base = FakeCloud.prototype.kind;
  w.cloud.kind = (org, name) => ({
    ...base.call(w.cloud, org, name),
    finite: { outcomeOf: (phase) => (phase === 'DONE' ? 'Complete' : undefined) },
  });
}

const synced = (w: WidgetWorld, key = KEY) => conditionOf(w.api.get(key), 'Synced');
const ready = (w: WidgetWorld, key = KEY) => conditionOf(w.api.get(key), 'Ready');

/** Creates the resource, settles it and answers the id of its object. */
async function made(w: WidgetWorld, spec: Record<string, unknown>): Promise<string> {
  w.api.create('w', spec);
  await w.settle(KEY);
  const id = w.api.get(KEY)?.status?.id;
  assert.ok(typeof id === 'string');
  return id;
}

/** Adopts a widget made outside under `spec`, and answers its id. */
async function adopted(w: WidgetWorld, spec: Record<string, unknown>, spot = false): Promise<string> {
  const outside = w.cloud.put({ name: 'w', spot });
  w.api.create('w', spec, { annotations: { [EXTERNAL_ID]: outside.id } });
  await w.settle(KEY);
  assert.equal(w.api.get(KEY)?.status?.id, outside.id);
  return outside.id;
}

/** Deletes `id` behind the operator's back, and lets the account's cache list once since. */
async function gone(w: WidgetWorld, id: string): Promise<void> {
  w.cloud.objects.delete(id);
  await new Promise((resolve) => setTimeout(resolve, 100));
}

const creates = (w: WidgetWorld) => w.cloud.calls.filter((call) => call.op === 'create').length;

describe('an object lost while its resource lives', () => {
  test('a finite one gone before it finished fails for good: Lost, and never made again', async () => {
    const w = open();
    finite(w);
    const id = await made(w, {});
    await gone(w, id);
    await w.settle(KEY);
    await w.settle(KEY);
    const status = w.api.get(KEY)?.status;
    assert.equal(ready(w)?.reason, 'Lost');
    assert.equal(ready(w)?.status, 'False');
    assert.equal(conditionOf(w.api.get(KEY), 'Failed')?.status, 'True');
    assert.equal(conditionOf(w.api.get(KEY), 'Failed')?.reason, 'Lost');
    assert.equal(
      ready(w)?.message,
      `Widget ${id} is gone from the cloud before it finished; it is not made again`,
    );
    assert.ok(Math.abs(Date.parse(String(status?.completionTime)) - Date.now()) < 5_000);
    assert.equal(status?.id, id);
    assert.equal(creates(w), 1);
    assert.deepEqual(
      w.reasonsOf(KEY).filter((reason) => reason === 'Lost'),
      ['Lost'],
    );
  });

  test('a lost finite resource with ttlSecondsAfterFinished 0 is deleted', async () => {
    const w = open();
    finite(w);
    const id = await made(w, { ttlSecondsAfterFinished: 0 });
    await gone(w, id);
    await w.settle(KEY);
    assert.ok(w.api.get(KEY)?.metadata.deletionTimestamp, 'deleted once it failed');
    await w.settle(KEY);
    assert.equal(w.api.get(KEY), undefined);
  });

  test('one deleted behind the operator’s back is made again, and the replacement’s id recorded', async () => {
    const w = open();
    const first = await made(w, {});
    await gone(w, first);
    await w.settle(KEY);
    const obj = w.api.get(KEY);
    const second = obj?.status?.id;
    assert.ok(typeof second === 'string' && second !== first);
    assert.equal(obj?.metadata.annotations?.[EXTERNAL_ID], second);
    assert.equal(w.cloud.objects.get(second)?.status, 'RUNNING');
    assert.equal(creates(w), 2);
    const goneEvent = w.recorded.events.find((event) => event.reason === 'ExternalResourceGone');
    assert.equal(goneEvent?.type, 'Warning');
    assert.equal(goneEvent?.message, `Widget ${first} is gone from the cloud; creating a replacement`);
    assert.deepEqual(
      w.recorded.fleet.filter((event) => event === 'preempted'),
      [],
      'not a preemption',
    );
  });

  test('without the Create policy it is ExternalResourceGone, terminal, and nothing is made', async () => {
    const w = open();
    const id = await adopted(w, { managementPolicies: ['Observe', 'Update', 'Delete'] });
    await gone(w, id);
    const { errors } = await w.settle(KEY, { expect: ['ExternalResourceGone'] });
    assert.equal(errors.at(-1)?.name, 'TerminalError');
    assert.equal(synced(w)?.reason, 'ExternalResourceGone');
    assert.equal(
      synced(w)?.message,
      `Widget ${id} is gone from the cloud; managementPolicies do not include Create, so no replacement is made`,
    );
    assert.equal(creates(w), 0);
    assert.equal(w.api.get(KEY)?.metadata.annotations?.[EXTERNAL_ID], id, 'the id stays named');
  });

  test('a spot one gone is a preemption, counted once; recoveryPolicy Never leaves it down', async () => {
    const w = open();
    const id = await made(w, { spot: true });
    await gone(w, id);
    await w.settle(KEY);
    await w.settle(KEY);
    const status = w.api.get(KEY)?.status;
    assert.equal(status?.preemptions, 1);
    assert.ok(Math.abs(Date.parse(String(status?.lastPreemptionTime)) - Date.now()) < 5_000);
    assert.equal(ready(w)?.reason, 'Preempted');
    assert.equal(ready(w)?.status, 'False');
    assert.equal(
      ready(w)?.message,
      `spot Widget ${id} is gone from the cloud without the operator asking; recoveryPolicy Never leaves it down`,
    );
    assert.deepEqual(
      w.recorded.fleet.filter((event) => event === 'preempted'),
      ['preempted'],
    );
    const events = w.recorded.events.filter((event) => event.reason === 'Preempted');
    assert.equal(events.length, 1);
    assert.equal(events[0]?.type, 'Warning');
    assert.equal(creates(w), 1, 'no replacement');
    assert.equal(w.api.get(KEY)?.metadata.annotations?.[EXTERNAL_ID], id);
  });

  test('a spot one gone with Recreate is counted, and replaced after its backoff', async () => {
    const w = open();
    const id = await made(w, { spot: true, recoveryPolicy: 'Recreate' });
    await gone(w, id);
    await w.settle(KEY, 4);
    assert.equal(w.api.get(KEY)?.status?.preemptions, 1);
    assert.equal(
      ready(w)?.message,
      `spot Widget ${id} is gone from the cloud without the operator asking; creating a replacement (recoveryPolicy Recreate)`,
    );
    assert.equal(w.api.get(KEY)?.metadata.annotations?.[EXTERNAL_ID], undefined, 'the id is let go');
    assert.equal(creates(w), 1, 'the replacement waits its backoff');
    w.clock.advance(9_000);
    await w.settle(KEY);
    assert.equal(creates(w), 1, 'not before its 10 s');
    w.clock.advance(1_000);
    await w.settle(KEY);
    assert.equal(creates(w), 2);
    assert.notEqual(w.api.get(KEY)?.status?.id, id);
    assert.equal(w.api.get(KEY)?.status?.preemptions, 1, 'counted once');
  });

  test('a spot one already counted as preempted is not counted again when it goes', async () => {
    const w = open();
    const id = await made(w, { spot: true });
    const widget = w.cloud.objects.get(id);
    assert.ok(widget);
    widget.status = 'FAILED';
    await w.settle(KEY, 3);
    assert.equal(w.api.get(KEY)?.status?.preemptions, 1);
    await gone(w, id);
    await w.settle(KEY, 3);
    assert.equal(w.api.get(KEY)?.status?.preemptions, 1);
    assert.equal(w.recorded.fleet.filter((event) => event === 'preempted').length, 1);
  });

  test('a spot one gone without the Create policy is counted, then ExternalResourceGone', async () => {
    const w = open();
    const id = await adopted(w, { spot: true, managementPolicies: ['Observe', 'Update', 'Delete'] }, true);
    await gone(w, id);
    await w.settle(KEY);
    assert.deepEqual(w.reasonsOf(KEY), ['Preempted', 'ExternalResourceGone']);
    assert.deepEqual(
      w.recorded.fleet.filter((event) => event === 'preempted'),
      ['preempted'],
    );
    assert.equal(synced(w)?.reason, 'ExternalResourceGone');
    assert.equal(creates(w), 0);
  });

  test('a preempted object is not deleted when the policies do not allow its replacement', async () => {
    const w = open();
    const id = await made(w, {
      spot: true,
      recoveryPolicy: 'Recreate',
      managementPolicies: ['Observe', 'Create', 'Update', 'LateInitialize'],
    });
    const widget = w.cloud.objects.get(id);
    assert.ok(widget);
    widget.status = 'FAILED';
    await w.settle(KEY, 3);
    assert.equal(ready(w)?.reason, 'Preempted');
    assert.deepEqual(w.cloud.mutations(id), []);
  });

  test('a preempted object of a kind that cannot delete is left as it is', async () => {
    const w = open();
    const base = FakeCloud.prototype.kind;
    w.cloud.kind = (org, name) => {
      const { delete: _delete, ...kind } = base.call(w.cloud, org, name);
      return kind;
    };
    const id = await made(w, { spot: true, recoveryPolicy: 'Recreate' });
    const widget = w.cloud.objects.get(id);
    assert.ok(widget);
    widget.status = 'FAILED';
    await w.settle(KEY, 3);
    assert.equal(ready(w)?.reason, 'Preempted');
    assert.equal(w.cloud.objects.get(id)?.status, 'FAILED');
    assert.equal(creates(w), 1);
  });

  test('Recreate deletes the preempted object, saying so', async () => {
    const w = open();
    const id = await made(w, { spot: true, recoveryPolicy: 'Recreate' });
    const widget = w.cloud.objects.get(id);
    assert.ok(widget);
    widget.status = 'FAILED';
    await w.settle(KEY, 3);
    const recovering = w.recorded.events.find((event) => event.reason === 'Recovering');
    assert.equal(recovering?.message, `deleting preempted Widget ${id} before creating its replacement`);
    assert.deepEqual(
      w.cloud.mutations(id).map((call) => call.op),
      ['delete'],
    );
  });
});

describe('more lost objects', () => {
  test('an annotated id the cloud does not have is refused at once, for good, saying what to do', async () => {
    const w = open();
    w.api.create('w', {}, { annotations: { [EXTERNAL_ID]: '4242' } });
    await assert.rejects(w.reconciler.reconcile({ namespace: 'ns-a', name: 'w' }), { name: 'TerminalError' });
    assert.equal(synced(w)?.reason, 'ExternalResourceNotFound');
    assert.equal(
      synced(w)?.message,
      `the cloud has no live Widget with id 4242, named by annotation ${EXTERNAL_ID}; fix or remove the annotation`,
    );
    assert.deepEqual(await w.reconciler.reconcile({ namespace: 'ns-a', name: 'w' }), {}, 'not retried');
  });

  test('a Lost object is said in a Warning event', async () => {
    const w = open();
    finite(w);
    const id = await made(w, {});
    await gone(w, id);
    await w.settle(KEY);
    const lost = w.recorded.events.find((event) => event.reason === 'Lost');
    assert.equal(lost?.type, 'Warning');
  });

  test('with the Create policy named among others, a replacement is made', async () => {
    const w = open();
    const id = await made(w, { managementPolicies: ['Observe', 'Create', 'Update', 'Delete'] });
    await gone(w, id);
    await w.settle(KEY);
    assert.equal(creates(w), 2);
  });

  test('of a kind without spot capacity is made again, never counted a preemption', async () => {
    const w = open();
    const base = FakeCloud.prototype.kind;
    w.cloud.kind = (org, name) => {
      const { spot: _spot, ...kind } = base.call(w.cloud, org, name);
      return kind;
    };
    const id = await made(w, { spot: true });
    await gone(w, id);
    const { errors } = await w.settle(KEY);
    assert.deepEqual(errors, []);
    assert.equal(creates(w), 2);
    assert.equal(w.api.get(KEY)?.status?.preemptions, undefined);
  });
});

const spec = (fields: CommonSpec): ManagedObject<CommonSpec> => ({
  apiVersion: 'v1',
  kind: 'Widget',
  metadata: { namespace: 'ns-a', name: 'w', uid: 'u', generation: 1, resourceVersion: '1' },
  spec: fields,
});

describe('the policies of a replacement', () => {
  test('Recreate replaces only with the policies to delete and to create', () => {
    assert.equal(recreates(spec({ recoveryPolicy: 'Recreate' })), true);
    assert.equal(recreates(spec({ recoveryPolicy: 'Recreate', managementPolicies: ['*'] })), true);
    assert.equal(recreates(spec({ recoveryPolicy: 'Never' })), false);
    assert.equal(recreates(spec({})), false);
    assert.equal(
      recreates(spec({ recoveryPolicy: 'Recreate', managementPolicies: ['Observe', 'Create'] })),
      false,
    );
    assert.equal(
      recreates(spec({ recoveryPolicy: 'Recreate', managementPolicies: ['Observe', 'Delete'] })),
      false,
    );
    assert.equal(
      recreates(spec({ recoveryPolicy: 'Recreate', managementPolicies: ['Create', 'Delete'] })),
      true,
    );
  });
});

const preempted = (extra: Partial<ManagedStatus>): ManagedStatus => ({
  conditions: [
    { type: 'Synced', status: 'True', reason: 'ReconcileSuccess', message: '', lastTransitionTime: '' },
    { type: 'Ready', status: 'False', reason: 'Preempted', message: '', lastTransitionTime: '' },
  ],
  ...extra,
});

describe('the backoff before a replacement', () => {
  const NOW = Date.parse('2026-03-01T00:00:00.000Z');
  const ago = (ms: number) => new Date(NOW - ms).toISOString();
  const waits = (status: ManagedStatus) => recreateBackoff(status, NOW);

  test('doubles from 10 s with each preemption, up to 5 minutes', () => {
    const table: Array<[number | undefined, number]> = [
      [1, 10_000],
      [undefined, 10_000],
      [0, 10_000],
      [2, 20_000],
      [3, 40_000],
      [5, 160_000],
      [6, 300_000],
      [40, 300_000],
    ];
    for (const [preemptions, expected] of table) {
      assert.equal(waits(preempted({ lastPreemptionTime: ago(0), preemptions })), expected, `${preemptions}`);
    }
  });

  test('counts from the last preemption, and is over once waited out', () => {
    assert.equal(waits(preempted({ lastPreemptionTime: ago(5_000), preemptions: 1 })), 5_000);
    assert.equal(waits(preempted({ lastPreemptionTime: ago(9_999), preemptions: 1 })), 1);
    assert.equal(waits(preempted({ lastPreemptionTime: ago(10_000), preemptions: 1 })), 0);
    assert.equal(waits(preempted({ lastPreemptionTime: ago(3_600_000), preemptions: 40 })), 0);
  });

  test('none without a preemption time, or once Ready no longer says Preempted', () => {
    const now = ago(0);
    assert.equal(waits(preempted({})), 0);
    assert.equal(waits(preempted({ lastPreemptionTime: 'not a time' })), 0);
    assert.equal(recreateBackoff(undefined, NOW), 0);
    assert.equal(waits({ lastPreemptionTime: now, preemptions: 1 }), 0);
    assert.equal(
      waits({
        lastPreemptionTime: now,
        preemptions: 1,
        conditions: [
          { type: 'Ready', status: 'True', reason: 'Running', message: '', lastTransitionTime: '' },
        ],
      }),
      0,
    );
  });
});

describe('the spot status', () => {
  test('a preemption adds one to the count and dates it now', () => {
    const now = Date.parse('2026-03-01T00:00:00.000Z');
    assert.deepEqual(countPreemption(undefined, now), {
      preemptions: 1,
      lastPreemptionTime: '2026-03-01T00:00:00.000Z',
    });
    assert.equal(countPreemption({ preemptions: 4 }, now).preemptions, 5);
  });

  test('as it stands, and the Ready reason', () => {
    assert.deepEqual(spotStatus({ preemptions: 2, lastPreemptionTime: 't' }), {
      preemptions: 2,
      lastPreemptionTime: 't',
    });
    assert.deepEqual(spotStatus(undefined), { preemptions: undefined, lastPreemptionTime: undefined });
    assert.equal(readyReason(preempted({})), 'Preempted');
    assert.equal(readyReason({ conditions: [] }), undefined);
    assert.equal(readyReason(undefined), undefined);
  });
});

test('a spot object gone without the Create policy keeps its counted preemption in status, beside the refusal', async () => {
  world = widgetWorld();
  const w = world;
  const outside = w.cloud.put({ name: 'w', spot: true });
  w.api.create(
    'w',
    { spot: true, managementPolicies: ['Observe', 'Update', 'Delete'] },
    { annotations: { [EXTERNAL_ID]: outside.id } },
  );
  await w.settle(KEY, { expect: ['ExternalResourceGone'] });
  w.cloud.objects.delete(outside.id);
  await new Promise((resolve) => setTimeout(resolve, 40));
  await w.settle(KEY, { expect: ['ExternalResourceGone'] });
  await w.settle(KEY, { expect: ['ExternalResourceGone'] });
  assert.deepEqual(
    w.recorded.fleet.filter((event) => event === 'preempted'),
    ['preempted'],
    'counted once in the metrics',
  );
  assert.equal(conditionOf(w.api.get(KEY), 'Synced')?.reason, 'ExternalResourceGone');
  assert.equal(w.api.get(KEY)?.status?.preemptions, 1, 'and in status');
  assert.equal(conditionOf(w.api.get(KEY), 'Ready')?.reason, 'Preempted');
});
