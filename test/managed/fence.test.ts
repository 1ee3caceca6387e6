import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ExternalKind, ManagedObject, Plan } from '../../src/managed/external-kind.ts';
import { fencedAdapter, NotLeaderError } from '../../src/managed/fence.ts';

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
    isOwnCreate: async () => false,
    demand: async () => ({ live: true }),
    heldGpus: () => 0,
    priceOf: async () => 0,
    create: async () => {
      changes.push('create');
      return { id: 'c-1' };
    },
    plan: async (): Promise<Plan> => ({
      kind: 'act',
      step: { reason: 'Pausing', describe: 'pausing', run: async () => void changes.push('step') },
    }),
    delete: async () => void changes.push('delete'),
    readiness: refuse,
    phaseOf: refuse,
    statusOf: refuse,
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
