import assert from 'node:assert/strict';
import { afterEach, describe, test } from 'node:test';
import { conditionOf } from './fakes.ts';
import { type WidgetWorld, widgetWorld } from './world.ts';

// A kind whose objects keep the environment they were made with: rotated Secrets are reported, or, when
// the resource asks, the object is replaced (old one deleted first), never under Observe.
const KEY = 'ns-a/w';
let world: WidgetWorld;
afterEach(async () => world?.close());

function open(rotated: () => string[]): WidgetWorld {
  const w: WidgetWorld = widgetWorld({
    adapt: (kind) => ({
      ...kind,
      secrets: { ...kind.secrets, rotatedSecrets: async () => rotated() },
      // A call takes time, and the test clock stands still unless moved: lists in flight are older.
      delete: async (id) => {
        await kind.delete?.(id);
        w.clock.advance(1);
      },
    }),
  });
  world = w;
  return w;
}

describe('rotated Secrets an object cannot take', () => {
  test('are reported as Synced=False SecretRotated, naming them, with one Warning', async () => {
    let rotated: string[] = [];
    const w = open(() => rotated);
    w.api.create('w', {});
    await w.settle(KEY);
    assert.equal(conditionOf(w.api.get(KEY), 'Synced')?.status, 'True');
    rotated = ['token', 'other'];
    await w.settle(KEY);
    await w.settle(KEY);
    const synced = conditionOf(w.api.get(KEY), 'Synced');
    assert.equal(synced?.reason, 'SecretRotated');
    assert.match(
      String(synced?.message),
      /^Secret "token", "other" changed since the cloud Widget was created/,
    );
    assert.deepEqual(
      w.reasonsOf(KEY).filter((reason) => reason === 'SecretRotated'),
      ['SecretRotated'],
    );
    rotated = [];
    await w.settle(KEY);
    assert.equal(conditionOf(w.api.get(KEY), 'Synced')?.status, 'True');
  });

  test('replace the object when the resource asks: deleted first, then made again', async () => {
    let rotated: string[] = [];
    const w = open(() => rotated);
    w.api.create('w', { secretRotationPolicy: 'Recreate' });
    await w.settle(KEY);
    const first = String(w.api.get(KEY)?.status?.id);
    rotated = ['token'];
    await w.reconciler.reconcile({ namespace: 'ns-a', name: 'w' });
    rotated = [];
    await w.settle(KEY);
    const second = String(w.api.get(KEY)?.status?.id);
    assert.notEqual(second, first);
    assert.equal(w.cloud.objects.get(first)?.status, 'TERMINATED');
    assert.equal(w.cloud.objects.get(second)?.status, 'RUNNING');
    assert.ok(w.reasonsOf(KEY).includes('Recreating'));
    assert.ok(!w.reasonsOf(KEY).includes('ExternalResourceGone'), 'not taken for a loss');
  });

  test('are not looked for under Observe', async () => {
    let asked = 0;
    const w = open(() => {
      asked += 1;
      return ['token'];
    });
    w.api.create('w', {});
    await w.settle(KEY);
    asked = 0;
    w.api.patchSpec(KEY, { managementPolicies: ['Observe'], secretRotationPolicy: 'Recreate' });
    await w.settle(KEY);
    assert.equal(asked, 0);
    assert.equal(conditionOf(w.api.get(KEY), 'Synced')?.status, 'True');
  });
});
