import assert from 'node:assert/strict';
import { afterEach, test } from 'node:test';
import { FINALIZER } from '../../src/managed/core/annotations.ts';
import { type WidgetWorld, widgetWorld } from './world.ts';

// What the reconciler keeps per resource (`remembered()`, the gauge gpucloud_remembered_resources) is
// let go when the resource goes, whatever path it went by: deleted through the finalizer, removed by the
// apiserver with the finalizer, refused before the finalizer and deleted, its finalizer removed by hand.

let world: WidgetWorld;
afterEach(async () => world?.close());

/** Every memory but the cloud cache, which holds cloud objects until the cloud stops listing them. */
function perResource(w: WidgetWorld): Record<string, number> {
  const { cloudObjects: _, ...rest } = w.reconciler.remembered();
  return rest;
}

test('after resources go by every path, each memory holds no more than the live ones', async () => {
  const w = widgetWorld({ policy: { allowsNamespace: (namespace) => namespace !== 'refused' } });
  world = w;
  w.api.create('keep', {}, {}, 'ns-a');
  await w.settle('ns-a/keep');
  const keys: string[] = [];
  for (let i = 0; i < 12; i++) {
    const refused = i % 4 === 2;
    const namespace = refused ? 'refused' : 'ns-a';
    w.api.create(`w${i}`, {}, refused ? { finalizers: [FINALIZER] } : {}, namespace);
    const key = `${namespace}/w${i}`;
    await w.settle(key, refused ? { expect: ['ProviderConfigNotAllowed'] } : {});
    keys.push(key);
  }
  const alive = perResource(w);
  assert.equal(alive.readiness, 10, 'every converged resource is remembered while it lives');
  assert.equal(alive.refusals, 3, 'so is every refusal');
  for (const [i, key] of keys.entries()) {
    const path = i % 4;
    if (path === 0) {
      w.api.delete(key);
      // The DELETED event of a finalizer's removal carries the state stored before it.
      const last = w.api.get(key);
      await w.settle(key);
      assert.ok(last && !w.api.get(key));
      w.reconciler.vanished(last, true);
    } else if (path === 1) {
      w.reconciler.vanished(w.api.vanish(key), true);
      await w.settle(key);
    } else {
      // Refused (2) or converged (3): a user takes the finalizer off by hand and deletes the resource;
      // the watch's DELETED event carries it without the finalizer.
      const last = w.api.vanish(key);
      w.reconciler.vanished({ ...last, metadata: { ...last.metadata, finalizers: [] } }, true);
      await w.settle(key);
    }
  }
  const after = perResource(w);
  for (const [memory, count] of Object.entries(after)) {
    assert.ok(count <= 1, `${memory} still holds ${count} resources, 1 lives: ${JSON.stringify(after)}`);
  }
  assert.equal(after.readiness, 1, 'the live one is still remembered');
});
