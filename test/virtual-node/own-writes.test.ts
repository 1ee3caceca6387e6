import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { objectPath, pods } from '../../src/kube/resource-type.ts';
import { resourceOf } from '../../src/resources/common/kind.ts';
import { gpuPodKind } from '../../src/resources/gpu-pod/schema.ts';
import { nodePodSchema } from '../../src/virtual-node/pod-object.ts';
import { PodWrites, StaleRead } from '../../src/virtual-node/pod-writes.ts';
import { FakeApiserver } from '../managed/fake-apiserver.ts';

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
  return { api, read, writes: new PodWrites(api, resourceOf(gpuPodKind)) };
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
});
