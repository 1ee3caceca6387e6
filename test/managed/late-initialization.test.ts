import assert from 'node:assert/strict';
import { afterEach, describe, test } from 'node:test';
import { EXTERNAL_ID, FINALIZER } from '../../src/managed/core/annotations.ts';
import { type WidgetWorld, widgetWorld } from './world.ts';

// Late initialisation: the spec fields a user left out, filled once from the cloud object in the write
// that makes the resource hold it, recorded in status.lateInitialized. On the fakes.

const KEY = 'ns-a/w';
let worlds: WidgetWorld[] = [];

afterEach(async () => {
  for (const w of worlds) await w.close();
  worlds = [];
});

function open(options?: Parameters<typeof widgetWorld>[0]): WidgetWorld {
  const w = widgetWorld(options);
  worlds.push(w);
  return w;
}

const statusOf = (w: WidgetWorld, key = KEY) => w.api.get(key)?.status ?? {};
const specOf = (w: WidgetWorld, key = KEY) => w.api.get(key)?.spec as Record<string, unknown>;
const metadataWrites = (w: WidgetWorld) => w.api.writes.filter((write) => write.what.startsWith('metadata'));

describe('late initialisation when adopting', () => {
  test('fills only the fields the spec leaves out, with the finalizer, in one write', async () => {
    const w = open();
    const outside = w.cloud.put({ name: 'o', status: 'PAUSED', size: 4 });
    w.api.create('w', { size: 2 }, { annotations: { [EXTERNAL_ID]: outside.id } });
    await w.settle(KEY);
    assert.deepEqual(specOf(w), { size: 2, paused: true });
    assert.deepEqual(statusOf(w).lateInitialized, ['paused']);
    assert.deepEqual(w.api.get(KEY)?.metadata.finalizers, [FINALIZER]);
    assert.equal(metadataWrites(w).length, 1, 'one write');
    assert.match(metadataWrites(w)[0]?.what ?? '', /"spec":\{"paused":true\}/);
  });

  test('a spec that leaves nothing out writes only the finalizer, and records none filled', async () => {
    const w = open();
    const outside = w.cloud.put({ name: 'o', status: 'RUNNING', size: 4 });
    w.api.create('w', { size: 4, paused: false }, { annotations: { [EXTERNAL_ID]: outside.id } });
    await w.settle(KEY);
    assert.deepEqual(statusOf(w).lateInitialized, []);
    assert.equal(metadataWrites(w).length, 1);
    assert.ok(!(metadataWrites(w)[0]?.what ?? '').includes('spec'));
  });

  test('a resource that already has the finalizer and leaves nothing out writes no metadata', async () => {
    const w = open();
    const outside = w.cloud.put({ name: 'o', size: 4 });
    w.api.create(
      'w',
      { size: 4, paused: false },
      { annotations: { [EXTERNAL_ID]: outside.id }, finalizers: [FINALIZER] },
    );
    await w.settle(KEY);
    assert.deepEqual(metadataWrites(w), []);
    assert.deepEqual(statusOf(w).lateInitialized, []);
  });

  test('with the finalizer already, the fill is written alone, keeping other finalizers', async () => {
    const w = open();
    const outside = w.cloud.put({ name: 'o', size: 4 });
    w.api.create(
      'w',
      {},
      { annotations: { [EXTERNAL_ID]: outside.id }, finalizers: ['other/keep', FINALIZER] },
    );
    await w.settle(KEY);
    assert.deepEqual(w.api.get(KEY)?.metadata.finalizers, ['other/keep', FINALIZER]);
    assert.deepEqual(specOf(w), { paused: false, size: 4 });
    assert.ok(!(metadataWrites(w)[0]?.what ?? '').includes('finalizers'));
  });

  test('another finalizer is kept when the operator adds its own', async () => {
    const w = open();
    const outside = w.cloud.put({ name: 'o', size: 4 });
    w.api.create('w', {}, { annotations: { [EXTERNAL_ID]: outside.id }, finalizers: ['other/keep'] });
    await w.settle(KEY);
    assert.deepEqual(w.api.get(KEY)?.metadata.finalizers, ['other/keep', FINALIZER]);
  });

  test('is done once: a field removed later takes its cleared value and is never filled again', async () => {
    const w = open();
    const outside = w.cloud.put({ name: 'o', status: 'PAUSED', size: 4 });
    w.api.create('w', {}, { annotations: { [EXTERNAL_ID]: outside.id } });
    await w.settle(KEY);
    assert.deepEqual(statusOf(w).lateInitialized, ['paused', 'size']);
    // The user removes paused: it now means the cleared value, false, and the object is resumed.
    const obj = w.api.objects.get(KEY);
    assert.ok(obj);
    obj.spec = { size: 4 };
    obj.metadata.generation += 1;
    await w.settle(KEY);
    assert.deepEqual(specOf(w), { size: 4 }, 'not filled again');
    assert.deepEqual(
      w.cloud.mutations(outside.id).map((call) => call.op),
      ['resume'],
    );
    assert.deepEqual(statusOf(w).lateInitialized, ['paused', 'size'], 'the record stays');
  });

  test('under policies without LateInitialize nothing is filled, and the finalizer still goes in', async () => {
    const w = open();
    const outside = w.cloud.put({ name: 'o', status: 'PAUSED', size: 4 });
    w.api.create(
      'w',
      { managementPolicies: ['Observe', 'Update', 'Delete'] },
      { annotations: { [EXTERNAL_ID]: outside.id } },
    );
    await w.settle(KEY);
    assert.deepEqual(specOf(w), { managementPolicies: ['Observe', 'Update', 'Delete'] });
    assert.equal(statusOf(w).lateInitialized, undefined);
    assert.deepEqual(w.api.get(KEY)?.metadata.finalizers, [FINALIZER]);
    assert.deepEqual(w.cloud.mutations(), [], 'a left-out paused is not read as false');
  });

  test('policies that list LateInitialize fill', async () => {
    const w = open();
    const outside = w.cloud.put({ name: 'o', status: 'PAUSED', size: 4 });
    const policies = ['Observe', 'Update', 'Delete', 'LateInitialize'];
    w.api.create('w', { managementPolicies: policies }, { annotations: { [EXTERNAL_ID]: outside.id } });
    await w.settle(KEY);
    assert.deepEqual(specOf(w), { managementPolicies: policies, paused: true, size: 4 });
    assert.deepEqual(statusOf(w).lateInitialized, ['paused', 'size']);
  });

  test('the fill is written only to the version read: a user change meanwhile is kept', async () => {
    const w = open();
    const outside = w.cloud.put({ name: 'o', size: 4 });
    w.api.create('w', {}, { annotations: { [EXTERNAL_ID]: outside.id }, finalizers: [FINALIZER] });
    let once = true;
    w.api.beforePatch = (key) => {
      if (!once) return;
      once = false;
      w.api.patchSpec(key, { size: 9 });
    };
    await w.settle(KEY);
    assert.deepEqual(specOf(w), { size: 9, paused: false });
    assert.deepEqual(statusOf(w).lateInitialized, ['paused']);
  });

  test('a kind without late initialisation fills nothing and records nothing', async () => {
    const w = open({ adapt: (base) => ({ ...base, lateInit: undefined }) });
    const outside = w.cloud.put({ name: 'o', status: 'PAUSED', size: 4 });
    w.api.create('w', {}, { annotations: { [EXTERNAL_ID]: outside.id } });
    await w.settle(KEY);
    assert.deepEqual(specOf(w), {});
    assert.equal(statusOf(w).lateInitialized, undefined);
    assert.deepEqual(w.api.get(KEY)?.metadata.finalizers, [FINALIZER]);
  });

  test('the fields filled are recorded in code-unit order', async () => {
    const w = open({
      adapt: (base) => ({
        ...base,
        lateInit: {
          from: (widget) => ({ spot: widget.spot, size: widget.size, paused: widget.status === 'PAUSED' }),
          cleared: {},
        },
      }),
    });
    const outside = w.cloud.put({ name: 'o', size: 4 });
    w.api.create('w', {}, { annotations: { [EXTERNAL_ID]: outside.id } });
    await w.settle(KEY);
    assert.deepEqual(statusOf(w).lateInitialized, ['paused', 'size', 'spot']);
  });

  test('values the cloud object does not have are not filled', async () => {
    const w = open({
      adapt: (base) => ({
        ...base,
        lateInit: { from: (widget) => ({ size: widget.size, paused: undefined }), cleared: {} },
      }),
    });
    const outside = w.cloud.put({ name: 'o', status: 'PAUSED', size: 4 });
    w.api.create('w', {}, { annotations: { [EXTERNAL_ID]: outside.id } });
    await w.settle(KEY);
    assert.deepEqual(specOf(w), { size: 4 });
    assert.deepEqual(statusOf(w).lateInitialized, ['size']);
  });

  test('a resource whose status records the fill gets the finalizer back without a fill', async () => {
    const w = open();
    const outside = w.cloud.put({ name: 'o', status: 'PAUSED', size: 4 });
    w.api.create('w', {}, { annotations: { [EXTERNAL_ID]: outside.id } });
    w.api.setStatus(KEY, { id: outside.id, lateInitialized: ['paused'] });
    await w.settle(KEY);
    assert.deepEqual(w.api.get(KEY)?.metadata.finalizers, [FINALIZER]);
    assert.deepEqual(specOf(w), {}, 'no fill');
    assert.deepEqual(statusOf(w).lateInitialized, ['paused']);
    // paused was filled once and removed since: it means false, so the object is resumed.
    assert.deepEqual(
      w.cloud.mutations(outside.id).map((call) => call.op),
      ['resume'],
    );
  });
});

describe('late initialisation when creating', () => {
  test('what a create fills is recorded with the id', async () => {
    const w = open();
    w.api.create('w', { size: 2 });
    await w.settle(KEY);
    assert.deepEqual(specOf(w), { size: 2, paused: false });
    assert.deepEqual(statusOf(w).lateInitialized, ['paused']);
  });

  test('a resource created under policies without LateInitialize has nothing filled', async () => {
    const w = open();
    w.api.create('w', { managementPolicies: ['Observe', 'Create', 'Update', 'Delete'] });
    await w.settle(KEY);
    assert.deepEqual(statusOf(w).lateInitialized, []);
    assert.deepEqual(Object.keys(specOf(w)), ['managementPolicies']);
  });

  test('a resource whose create is re-tried after its status recorded the fill is not filled again', async () => {
    const w = open();
    w.api.create('w', {});
    w.api.setStatus(KEY, { lateInitialized: [] });
    await w.settle(KEY);
    assert.deepEqual(specOf(w), {});
    assert.deepEqual(statusOf(w).lateInitialized, []);
  });
});

describe('the record of what was filled', () => {
  /** The resource's copy as it was before its first status write: the spec filled, no status yet. */
  async function staleCopyAfterAdoption(w: WidgetWorld) {
    const outside = w.cloud.put({ name: 'o', status: 'PAUSED', size: 4 });
    w.api.create('w', {}, { annotations: { [EXTERNAL_ID]: outside.id } });
    await w.settle(KEY);
    const obj = w.api.objects.get(KEY);
    assert.ok(obj);
    return { obj, outside };
  }

  test('is written in the same write as the fill', async () => {
    const w = open();
    await staleCopyAfterAdoption(w);
    const [fill] = metadataWrites(w);
    assert.match(fill?.what ?? '', /"spec":\{/);
    assert.match(fill?.what ?? '', /"gpucloud\.io\/late-initialized":"paused,size"/);
  });

  test('a copy read before the status write does not take the filled fields for the user’s', async () => {
    const w = open();
    const { obj, outside } = await staleCopyAfterAdoption(w);
    obj.status = undefined;
    await w.reconcile(KEY);
    assert.deepEqual(statusOf(w).lateInitialized, ['paused', 'size']);
    assert.deepEqual(w.cloud.mutations(outside.id), []);
  });

  test('holds for any later copy and any process: no window, no memory', async () => {
    const w = open();
    const { obj } = await staleCopyAfterAdoption(w);
    await w.reconcile(KEY);
    obj.status = undefined;
    w.clock.advance(3_600_000);
    await w.reconcile(KEY);
    assert.deepEqual(statusOf(w).lateInitialized, ['paused', 'size']);
  });

  test('a fill once LateInitialize is added to the policies is recorded for a copy read before its status', async () => {
    const w = open();
    const outside = w.cloud.put({ name: 'o', status: 'PAUSED', size: 4 });
    w.api.create(
      'w',
      { managementPolicies: ['Observe', 'Update', 'Delete'] },
      { annotations: { [EXTERNAL_ID]: outside.id } },
    );
    await w.settle(KEY);
    const before = structuredClone(w.api.get(KEY)?.status);
    assert.equal(before?.lateInitialized, undefined);
    w.api.patchSpec(KEY, { managementPolicies: ['*'] });
    await w.settle(KEY);
    assert.deepEqual(statusOf(w).lateInitialized, ['paused', 'size']);
    const obj = w.api.objects.get(KEY);
    assert.ok(obj);
    obj.status = before;
    await w.reconcile(KEY);
    assert.deepEqual(statusOf(w).lateInitialized, ['paused', 'size']);
  });
});
