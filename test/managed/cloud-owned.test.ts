import assert from 'node:assert/strict';
import { afterEach, describe, test } from 'node:test';
import { EXTERNAL_ID } from '../../src/managed/core/annotations.ts';
import { cloudOwned, driftOf } from '../../src/managed/core/cloud-owned.ts';
import { conditionOf } from './fakes.ts';
import { type WidgetWorld, widgetWorld } from './world.ts';

// spec.ignoreDrift on the generic reconciler: the fields listed take the cloud's value (no step corrects
// them) and are not reported as drift; late initialisation still fills them once.
const KEY = 'ns-a/w';
let world: WidgetWorld;
afterEach(async () => world?.close());

function open(): WidgetWorld {
  world = widgetWorld();
  return world;
}

const mr = (spec: Record<string, unknown>) => ({
  apiVersion: 'x/v1',
  kind: 'Widget',
  metadata: { namespace: 'ns-a', name: 'w', uid: 'u', generation: 1, resourceVersion: '1' },
  spec,
});

describe('the fields the cloud owns', () => {
  const adapter = {
    lateInit: {
      from: (cloud: { size: number; paused: boolean }) => ({ size: cloud.size, paused: cloud.paused }),
      cleared: {},
    },
  };

  test('take the cloud value of what late initialisation knows; the rest of the spec stands', () => {
    const owned = cloudOwned(
      mr({ size: 1, paused: false, ignoreDrift: ['paused'] }),
      { size: 4, paused: true },
      adapter,
    );
    assert.deepEqual(owned.spec, { size: 1, paused: true, ignoreDrift: ['paused'] });
    const none = mr({ size: 1 });
    assert.equal(
      cloudOwned(none, { size: 4, paused: true }, adapter),
      none,
      'nothing listed: the same resource',
    );
  });

  test('a value the cloud does not report leaves the spec’s; nothing taken, the same resource', () => {
    const unknown = { lateInit: { from: () => ({ size: undefined, paused: undefined }), cleared: {} } };
    const owned = cloudOwned(
      mr({ paused: false, ignoreDrift: ['paused'] }),
      { size: 4, paused: true },
      unknown,
    );
    assert.deepEqual(owned.spec, { paused: false, ignoreDrift: ['paused'] });
    const onlyDrift = mr({ size: 1, ignoreDrift: ['colour'] });
    assert.equal(cloudOwned(onlyDrift, { size: 4, paused: true }, adapter), onlyDrift);
  });

  test('are left out of the drift reported', () => {
    const seen = { drift: ['size', 'colour'] };
    assert.deepEqual(driftOf(mr({ ignoreDrift: ['colour'] }), seen), ['size']);
    assert.deepEqual(driftOf(mr({}), seen), ['size', 'colour']);
  });

  test('a widget paused in the cloud is not resumed, and stays Synced', async () => {
    const w = open();
    w.api.create('w', { paused: false, ignoreDrift: ['paused'] });
    await w.settle(KEY);
    const id = String(w.api.get(KEY)?.status?.id);
    const widget = w.cloud.objects.get(id);
    assert.ok(widget);
    widget.status = 'PAUSED';
    await w.settle(KEY);
    assert.ok(!w.cloud.mutations(id).some((call) => call.op === 'resume'));
    assert.equal(w.cloud.objects.get(id)?.status, 'PAUSED');
    assert.equal(conditionOf(w.api.get(KEY), 'Synced')?.status, 'True');
    // Listed no more: the spec's value is corrected again.
    w.api.patchSpec(KEY, { ignoreDrift: [] });
    await w.settle(KEY);
    assert.equal(w.cloud.objects.get(id)?.status, 'RUNNING');
  });

  test('an adopted widget of another size is Drifted, and not once the size is the cloud’s', async () => {
    const w = open();
    const made = w.cloud.put({ name: 'w', size: 8 });
    w.api.create('w', { size: 2 }, { annotations: { [EXTERNAL_ID]: made.id } });
    await w.settle(KEY);
    assert.equal(conditionOf(w.api.get(KEY), 'Synced')?.reason, 'Drifted');
    w.api.patchSpec(KEY, { ignoreDrift: ['size'] });
    await w.settle(KEY);
    assert.equal(conditionOf(w.api.get(KEY), 'Synced')?.status, 'True');
    assert.equal(
      (w.api.get(KEY)?.spec as { size?: number } | undefined)?.size,
      2,
      'the spec is not rewritten',
    );
  });
});
