import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { DeepReadonly, KubeObject } from '../../src/kube/object.ts';
import { ObjectCache } from '../../src/kube/object-store.ts';

type Pod = KubeObject & { spec: { secrets: string[] } };

function pod(name: string, secrets: string[]): DeepReadonly<Pod> {
  return { metadata: { name, namespace: 'ns' }, spec: { secrets } };
}

const bySecret = (obj: DeepReadonly<Pod>) => obj.spec.secrets;
const names = (objs: DeepReadonly<Pod>[]) => objs.map((obj) => obj.metadata.name).sort();

test('an index follows adds, updates, deletes and replacements', () => {
  const cache = new ObjectCache<Pod>();
  cache.set('ns/a', pod('a', ['s1']));
  cache.addIndex('secret', bySecret);
  cache.set('ns/b', pod('b', ['s1', 's2']));
  assert.deepEqual(names(cache.byIndex('secret', 's1')), ['a', 'b']);

  cache.set('ns/a', pod('a', ['s2']));
  assert.deepEqual(names(cache.byIndex('secret', 's1')), ['b']);
  assert.deepEqual(names(cache.byIndex('secret', 's2')), ['a', 'b']);

  cache.delete('ns/b');
  assert.deepEqual(names(cache.byIndex('secret', 's2')), ['a']);

  cache.replace(new Map([['ns/c', pod('c', ['s3'])]]));
  assert.deepEqual(names(cache.byIndex('secret', 's2')), []);
  assert.deepEqual(names(cache.byIndex('secret', 's3')), ['c']);
  assert.equal(cache.get({ namespace: 'ns', name: 'c' })?.metadata.name, 'c');
  assert.equal(cache.size, 1);
});

test('an index function that throws files the object nowhere and leaves the cache intact', () => {
  const cache = new ObjectCache<Pod>();
  cache.addIndex('broken', (obj) => {
    if (obj.metadata.name === 'bad') throw new Error('bug');
    return ['x'];
  });
  cache.set('ns/bad', pod('bad', []));
  cache.set('ns/good', pod('good', []));
  assert.deepEqual(names(cache.byIndex('broken', 'x')), ['good']);
  assert.equal(cache.size, 2);
});

test('asking for an unknown index, or adding one twice, is a clear error', () => {
  const cache = new ObjectCache<Pod>();
  cache.addIndex('secret', bySecret);
  assert.throws(() => cache.addIndex('secret', bySecret), /index "secret" already exists/);
  assert.throws(() => cache.byIndex('nope', 'x'), /no index "nope"/);
});
