import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { arrowsOf, LAYERS, layerOf, violations } from './layers.ts';

const SRC = fileURLToPath(new URL('../../src/', import.meta.url));

describe('the layers of src/', () => {
  test('every import runs the way the rule allows', async () => {
    const arrows = await arrowsOf(SRC);
    assert.ok(arrows.length > 100, `read ${arrows.length} imports`);
    assert.deepEqual(violations(arrows), []);
  });

  test('every folder of src/ is a layer of the rule', async () => {
    const layers = new Set((await arrowsOf(SRC)).map((arrow) => layerOf(arrow.from)));
    for (const layer of layers) assert.ok(layer in LAYERS, `${layer} is in the rule`);
  });

  test('the generic layers know nothing of GPU clouds, and managed nothing of the kinds', () => {
    for (const [layer, target] of [
      ['kube', 'api'],
      ['controller', 'managed'],
      ['controller', 'api'],
      ['managed', 'resources'],
      ['api', 'kube'],
    ] as const) {
      assert.ok(!LAYERS[layer]?.includes(target), `${layer} may not import ${target}`);
    }
  });

  test('a deliberate violation is caught, and names the file and the two layers', () => {
    const arrows = [
      { from: 'managed/reconciler.ts', to: 'resources/gpu-pod/adapter.ts' },
      { from: 'resources/gpu-pod/adapter.ts', to: 'managed/external-kind.ts' },
      { from: 'kube/informer.ts', to: 'kube/object-store.ts' },
    ];
    assert.deepEqual(violations(arrows), [
      'managed/reconciler.ts imports resources/gpu-pod/adapter.ts: "managed" may not import "resources"',
    ]);
  });

  test('a file of a layer the rule does not know is caught', () => {
    assert.deepEqual(violations([{ from: 'misc/thing.ts', to: 'lib/delay.ts' }]), [
      'misc/thing.ts: its layer "misc" is not in the rule',
    ]);
  });
});
