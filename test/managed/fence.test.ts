import assert from 'node:assert/strict';
import { afterEach, describe, test } from 'node:test';
import { EXTERNAL_ID } from '../../src/managed/core/annotations.ts';
import type { ExternalKind, ManagedObject, Plan } from '../../src/managed/core/external-kind.ts';
import { fencedAdapter, NotLeaderError } from '../../src/managed/core/fence.ts';
import { conditionOf } from './fakes.ts';
import { widgetWorld } from './world.ts';

interface Cloud {
  id: string;
}

/** An adapter that records every cloud change it is asked to make. */
function recordingAdapter(changes: string[]): ExternalKind<unknown, Cloud> {
  const refuse = (): never => {
    throw new Error('not used by this test');
  };
  return {
    kind: 'thing',
    list: async () => [],
    get: async () => undefined,
    idOf: (cloud) => cloud.id,
    createdAtOf: () => 0,
    fingerprint: (cloud) => cloud.id,
    isGone: () => false,
    identity: { isOwnCreate: async () => false },
    metering: { demand: async () => ({ live: true }), heldGpus: () => 0, priceOf: async () => 0 },
    create: async () => {
      changes.push('create');
      return { id: 'c-1' };
    },
    plan: async (): Promise<Plan> => ({
      kind: 'act',
      step: { reason: 'Pausing', describe: 'pausing', run: async () => void changes.push('step') },
    }),
    delete: async () => void changes.push('delete'),
    phaseOf: refuse,
    observe: refuse,
  };
}

const mr = {
  metadata: { name: 'a', namespace: 'ns', uid: 'u' },
  spec: {},
} as unknown as ManagedObject<unknown>;
const ctx = {
  resolveEnv: async () => [],
  secretsChanged: () => false,
  ownerMarker: { key: 'OWNER', value: 'u' },
};

test('every cloud change goes through while this process may act, and none once it may not', async () => {
  const changes: string[] = [];
  let leading = true;
  const adapter = fencedAdapter(recordingAdapter(changes), () => leading);
  const cloud = await adapter.create(mr, ctx);
  const runStep = async () => {
    const plan = await adapter.plan(mr, cloud, ctx);
    assert.equal(plan.kind, 'act');
    if (plan.kind === 'act') await plan.step.run();
  };
  const remove = adapter.delete;
  assert.ok(remove, 'a kind that deletes keeps its delete behind the fence');
  await runStep();
  await remove('c-1');
  leading = false;
  await assert.rejects(runStep(), NotLeaderError);
  await assert.rejects(async () => adapter.create(mr, ctx), NotLeaderError);
  await assert.rejects(async () => remove('c-1'), NotLeaderError);
  assert.deepEqual(changes, ['create', 'step', 'delete']);
  assert.deepEqual(await adapter.list(), [], 'reads are not fenced');
});

describe('a process that may no longer lead, or whose turn was aborted', () => {
  const KEY = 'ns-a/w';
  const worlds: Array<{ close(): Promise<void> }> = [];
  afterEach(async () => {
    for (const world of worlds.splice(0)) await world.close();
  });

  test('writes nothing to the apiserver either, and reports nothing', async () => {
    const w = widgetWorld();
    worlds.push(w);
    w.api.create('w', {});
    await w.settle(KEY);
    const id = String(w.api.get(KEY)?.status?.id);
    const writes = w.api.writes.length;
    // The cloud object changes; a deposed leader reads it and must not write the news.
    const widget = w.cloud.objects.get(id);
    assert.ok(widget);
    widget.size = 2;
    w.state.leader = false;
    await w.reconcile(KEY);
    assert.equal(w.api.writes.length, writes, 'no write of a process that may no longer lead lands');
    assert.deepEqual(
      w.eventsOf(KEY).filter((event) => event.type === 'Warning'),
      [],
    );
    w.state.leader = true;
    await w.settle(KEY);
    assert.equal(conditionOf(w.api.get(KEY), 'Synced')?.reason, 'Drifted', 'the next leader writes it');
    assert.deepEqual(
      w
        .eventsOf(KEY)
        .filter((event) => event.type === 'Warning')
        .map((event) => event.reason),
      ['Drifted'],
    );
  });

  test('a turn whose signal aborts mid-way (a lost lease) writes nothing after, and the next turn makes no second object', async () => {
    const w = widgetWorld();
    worlds.push(w);
    w.api.create('w', {});
    const lease = new AbortController();
    w.cloud.duringCreate = () => lease.abort();
    const result = await w.reconciler.reconcile({ namespace: 'ns-a', name: 'w' }, lease.signal);
    assert.deepEqual(result, {}, 'nothing to retry: the process is stepping down');
    const stored = w.api.get(KEY);
    assert.equal(
      stored?.metadata.annotations?.[EXTERNAL_ID],
      undefined,
      'the id is not recorded after the abort',
    );
    assert.equal(stored?.status, undefined, 'no status either');
    w.cloud.duringCreate = undefined;
    w.clock.advance(60_000);
    await w.settle(KEY);
    assert.equal(w.cloud.live().length, 1, 'the successor finds what the aborted turn made');
    assert.equal(w.api.get(KEY)?.status?.id, w.cloud.live()[0]?.id);
  });
});
