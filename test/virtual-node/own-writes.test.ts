import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { objectPath, pods } from '../../src/kube/resource-type.ts';
import { resourceOf } from '../../src/resources/common/kind.ts';
import { gpuPodKind } from '../../src/resources/gpu-pod/schema.ts';
import { nodePodSchema } from '../../src/virtual-node/pod-object.ts';
import { MADE_UNSEEN_MS, PodWrites, StaleRead } from '../../src/virtual-node/pod-writes.ts';
import { FakeApiserver } from '../managed/fake-apiserver.ts';
import { MovableClock } from '../support/clock.ts';

// The node's memory of its own writes to a Pod, on the fake apiserver: a copy the cache still shows from
// before such a write is stale (its write would be a 409), and nothing is decided from it.

const KEY = { namespace: 'team-a', name: 'web-1' };

function setup() {
  const api = new FakeApiserver();
  const path = objectPath(pods, KEY);
  api.put(path, {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { ...KEY },
    spec: { containers: [{ name: 'main', image: 'app:1' }] },
  });
  const read = () => nodePodSchema.parse(api.get(path));
  const clock = new MovableClock({ flowing: false });
  return { api, read, clock, writes: new PodWrites(api, resourceOf(gpuPodKind), clock) };
}

describe('what the node remembers of its own Pod writes', () => {
  test('a copy it wrote over is stale until the cache shows a newer one; then it is forgotten', async () => {
    const { read, writes } = setup();
    const before = read();
    assert.equal(writes.precedesOwnWrite(before), false, 'nothing written yet');
    await writes.holdPod(before);
    assert.equal(writes.precedesOwnWrite(before), true, 'the copy the finalizer was written over');
    const held = read();
    await writes.status(held, { phase: 'Pending' });
    assert.equal(writes.precedesOwnWrite(before), true, 'two writes behind');
    assert.equal(writes.precedesOwnWrite(held), true, 'one write behind');
    const current = read();
    assert.equal(writes.precedesOwnWrite(current), false, 'the cache caught up');
    assert.equal(writes.precedesOwnWrite(held), false, 'and the memory went with it');
  });

  test('a write refused as stale is not remembered', async () => {
    const { api, read, writes } = setup();
    const stale = read();
    api.beforeNext = () => {
      const { metadata } = read();
      api.put(objectPath(pods, KEY), { ...read(), metadata: { ...metadata, labels: { by: 'someone' } } });
    };
    await assert.rejects(writes.status(stale, { phase: 'Pending' }), StaleRead);
    assert.equal(writes.precedesOwnWrite(stale), false);
  });

  test('forget drops the memory of a Pod that is gone', async () => {
    const { read, writes } = setup();
    const before = read();
    await writes.holdPod(before);
    writes.forget(KEY);
    assert.equal(writes.precedesOwnWrite(before), false);
  });

  test('a GpuPod it made is awaited until the cache has it, then forgotten', async () => {
    const { writes } = setup();
    assert.equal(writes.madeUnseen(KEY, false), false, 'nothing made yet');
    await writes.createGpuPod(KEY, {
      apiVersion: 'gpucloud.io/v1alpha1',
      kind: 'GpuPod',
      metadata: { ...KEY },
    });
    assert.equal(writes.madeUnseen(KEY, false), true, 'made, not in the cache: a create now would be a 409');
    assert.equal(writes.madeUnseen({ ...KEY, name: 'web-2' }, false), false, 'another Pod made none');
    assert.equal(writes.madeUnseen(KEY, true), false, 'in the cache');
    assert.equal(writes.madeUnseen(KEY, false), false, 'forgotten once seen');
  });

  test('a GpuPod it made and the cache never showed stops holding its Pod back after a while', async () => {
    const { clock, writes } = setup();
    await writes.createGpuPod(KEY, {
      apiVersion: 'gpucloud.io/v1alpha1',
      kind: 'GpuPod',
      metadata: { ...KEY },
    });
    clock.advance(MADE_UNSEEN_MS - 1);
    assert.equal(writes.madeUnseen(KEY, false), true);
    clock.advance(1);
    assert.equal(writes.madeUnseen(KEY, false), false);
  });

  test('a GpuPod whose create was refused is not awaited; a Pod forgotten awaits nothing', async () => {
    const { api, writes } = setup();
    api.beforeNext = () => {
      throw Object.assign(new Error('exists'), { status: 409 });
    };
    await assert.rejects(writes.createGpuPod(KEY, { metadata: { ...KEY } }));
    assert.equal(writes.madeUnseen(KEY, false), false);
    await writes.createGpuPod({ ...KEY, name: 'web-2' }, { metadata: { ...KEY, name: 'web-2' } });
    writes.forget({ ...KEY, name: 'web-2' });
    assert.equal(writes.madeUnseen({ ...KEY, name: 'web-2' }, false), false);
  });
});
