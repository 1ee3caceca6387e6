import assert from 'node:assert/strict';
import { afterEach, describe, test } from 'node:test';
import { EXTERNAL_ID } from '../../src/managed/core/annotations.ts';
import { conditionOf, type Kind } from './fakes.ts';
import { type WidgetWorld, widgetWorld } from './world.ts';

// The kind's one observation of its object: made once per reconcile turn, and every part of the report
// (the kind's status fields, Ready, Synced's drift) reads that one value. On the fakes.

const KEY = 'ns-a/w';
const AT = { namespace: 'ns-a', name: 'w' };
let world: WidgetWorld;

afterEach(async () => world?.close());

/** A widget world whose kind counts its observations. */
function counted(answer?: (base: ReturnType<Kind['observe']>, n: number) => ReturnType<Kind['observe']>) {
  const seen = { count: 0 };
  world = widgetWorld({
    adapt: (base) => ({
      ...base,
      observe: (mr, widget) => {
        seen.count += 1;
        const observation = base.observe(mr, widget);
        return answer ? answer(observation, seen.count) : observation;
      },
    }),
  });
  return { w: world, seen };
}

describe("a reconcile turn's observation", () => {
  test('is made once in a turn that changes nothing', async () => {
    const { w, seen } = counted();
    w.api.create('w', {});
    await w.settle(KEY);
    const before = seen.count;
    await w.reconciler.reconcile(AT);
    assert.equal(seen.count - before, 1);
  });

  test('is made once in a turn that takes a step', async () => {
    const { w, seen } = counted();
    w.api.create('w', {});
    await w.settle(KEY);
    w.api.patchSpec(KEY, { paused: true });
    const before = seen.count;
    const steps = w.cloud.calls.length;
    await w.reconciler.reconcile(AT);
    assert.ok(
      w.cloud.calls.slice(steps).some((call) => call.op === 'pause'),
      'the turn paused the widget',
    );
    assert.equal(seen.count - before, 1);
  });

  test('is made once in the turn that adopts and late-initialises an object', async () => {
    const { w, seen } = counted();
    const outside = w.cloud.put({ name: 'o' });
    w.api.create('w', {}, { annotations: { [EXTERNAL_ID]: outside.id } });
    await w.reconciler.reconcile(AT);
    assert.deepEqual(w.api.get(KEY)?.status?.lateInitialized, ['paused', 'size']);
    assert.equal(seen.count, 1);
  });

  test('is the one source of the status fields and the drift reported: they never disagree', async () => {
    // Each answer differs from the last: the size it reports, and whether it finds drift (odd answers).
    const { w } = counted((base, n) => ({
      ...base,
      status: { size: n },
      drift: n % 2 === 1 ? ['size'] : [],
    }));
    w.api.create('w', {});
    await w.settle(KEY);
    for (let turn = 0; turn < 4; turn++) {
      await w.reconciler.reconcile(AT);
      const stored = w.api.get(KEY);
      const size = Number(stored?.status?.size);
      const synced = conditionOf(stored, 'Synced');
      assert.equal(synced?.reason, size % 2 === 1 ? 'Drifted' : 'ReconcileSuccess', `status size ${size}`);
    }
  });
});
