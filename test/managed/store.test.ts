import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { KubeObject } from '../../src/kube/object.ts';
import { ObjectCache } from '../../src/kube/object-store.ts';
import { EXTERNAL_ID } from '../../src/managed/core/annotations.ts';
import { managedStore, parseManaged } from '../../src/managed/core/store.ts';

interface Made {
  namespace?: string;
  name: string;
  uid?: string;
  annotation?: string;
  status?: unknown;
  spec?: unknown;
  deleting?: boolean;
}

function widget(made: Made): KubeObject {
  const metadata: KubeObject['metadata'] = {
    namespace: made.namespace ?? 'team-a',
    name: made.name,
    generation: 1,
    resourceVersion: '7',
  };
  if (made.uid !== undefined) metadata.uid = made.uid;
  if (made.annotation !== undefined) metadata.annotations = { [EXTERNAL_ID]: made.annotation };
  if (made.deleting) metadata.deletionTimestamp = '2026-01-01T00:00:00Z';
  const obj: KubeObject = { apiVersion: 'gpucloud.io/v1', kind: 'Widget', metadata, spec: made.spec ?? {} };
  if (made.status !== undefined) obj.status = made.status;
  return obj;
}

function cacheOf(...objects: KubeObject[]): ObjectCache<KubeObject> {
  const cache = new ObjectCache<KubeObject>();
  for (const obj of objects) cache.set(`${obj.metadata.namespace}/${obj.metadata.name}`, obj);
  return cache;
}

test('a claim named only by the annotation is unproved; one recorded in status is proved', () => {
  const store = managedStore([
    cacheOf(
      widget({ name: 'adopting', uid: 'u1', annotation: 'c-1' }),
      widget({ name: 'created', uid: 'u2', annotation: 'c-2', status: { id: 'c-2' } }),
    ),
  ]);
  assert.deepEqual(store.claimsOn('c-1'), [
    { key: { namespace: 'team-a', name: 'adopting' }, uid: 'u1', account: 'default', proved: false },
  ]);
  assert.deepEqual(store.claimsOn('c-2'), [
    { key: { namespace: 'team-a', name: 'created' }, uid: 'u2', account: 'default', proved: true },
  ]);
  assert.deepEqual(store.claimsOn('c-3'), []);
});

test('a resource whose annotation and status name different ids claims both, proving only the status one', () => {
  const store = managedStore([
    cacheOf(widget({ name: 'moved', uid: 'u1', annotation: 'old', status: { id: 'new', phase: 'RUNNING' } })),
  ]);
  assert.deepEqual(
    store.claimsOn('old').map((claim) => claim.proved),
    [false],
  );
  assert.deepEqual(
    store.claimsOn('new').map((claim) => claim.proved),
    [true],
  );
});

test('a status id alone is a claim, and the account is the one the spec names', () => {
  const store = managedStore([
    cacheOf(
      widget({
        name: 'billed',
        uid: 'u9',
        status: { id: 'c-9' },
        spec: { providerConfigRef: { name: 'finance' } },
      }),
    ),
  ]);
  assert.deepEqual(store.claimsOn('c-9'), [
    { key: { namespace: 'team-a', name: 'billed' }, uid: 'u9', account: 'finance', proved: true },
  ]);
});

test('empty and non-string ids are no claim, and a resource without uid claims with an empty uid', () => {
  const store = managedStore([
    cacheOf(
      widget({ name: 'blank', uid: 'u1', annotation: '' }),
      widget({ name: 'numeric', uid: 'u2', status: { id: 42 } }),
      widget({ name: 'no-id-field', uid: 'u3', status: { phase: 'RUNNING' } }),
      widget({ name: 'null-status', uid: 'u4', annotation: 'c-4', status: null }),
      widget({ name: 'anonymous', annotation: 'c-5' }),
      widget({ name: 'odd-status', uid: 'u6', annotation: 'c-6', status: 'c-6' }),
    ),
  ]);
  assert.deepEqual(store.claimsOn(''), []);
  assert.deepEqual(store.claimsOn('42'), []);
  assert.deepEqual(
    store.claimsOn('c-4').map((claim) => claim.uid),
    ['u4'],
  );
  assert.deepEqual(
    store.claimsOn('c-6').map((claim) => [claim.uid, claim.proved]),
    [['u6', false]],
    'a status that is no object proves nothing and hides no annotation',
  );
  assert.deepEqual(store.claimsOn('c-5'), [
    { key: { namespace: 'team-a', name: 'anonymous' }, uid: '', account: 'default', proved: false },
  ]);
});

test('claims are gathered from every store, one per resource even when annotation and status agree', () => {
  const store = managedStore([
    cacheOf(
      widget({ namespace: 'team-a', name: 'one', uid: 'u1', annotation: 'dup', status: { id: 'dup' } }),
    ),
    cacheOf(widget({ namespace: 'team-b', name: 'two', uid: 'u2', annotation: 'dup' })),
  ]);
  assert.deepEqual(
    store.claimsOn('dup').map((claim) => [claim.key.namespace, claim.proved]),
    [
      ['team-a', true],
      ['team-b', false],
    ],
  );
});

test('the index follows the informer: a changed annotation moves the claim', () => {
  const cache = cacheOf(widget({ name: 'w', uid: 'u1', annotation: 'first' }));
  const store = managedStore([cache]);
  cache.set('team-a/w', widget({ name: 'w', uid: 'u1', annotation: 'second' }));
  assert.deepEqual(store.claimsOn('first'), []);
  assert.equal(store.claimsOn('second').length, 1);
});

test('a uid is live while its resource exists and is not being deleted, in any store', () => {
  const store = managedStore([
    cacheOf(widget({ name: 'alive', uid: 'u-live' })),
    cacheOf(widget({ namespace: 'team-b', name: 'dying', uid: 'u-dying', deleting: true })),
  ]);
  assert.equal(store.isLive('u-live'), true);
  assert.equal(store.isLive('u-dying'), false);
  assert.equal(store.isLive('u-unknown'), false);
});

test('get finds the resource in whichever store holds it and returns a copy the cache does not share', () => {
  const stored = widget({
    namespace: 'team-b',
    name: 'w',
    uid: 'u1',
    status: { id: 'c1', phase: 'RUNNING' },
  });
  const store = managedStore([cacheOf(), cacheOf(stored)]);
  const got = store.get({ namespace: 'team-b', name: 'w' });
  assert.ok(got);
  assert.equal(got.metadata.uid, 'u1');
  assert.equal(got.status?.phase, 'RUNNING');
  assert.deepEqual(got.spec, {});
  got.metadata.name = 'changed';
  assert.equal(stored.metadata.name, 'w', 'the cached object is untouched');
  assert.equal(store.get({ namespace: 'team-a', name: 'w' }), undefined);
});

test('a resource the apiserver could not have stored is refused, not returned half-read', () => {
  const malformed = widget({ name: 'w', uid: 'u1' });
  delete malformed.metadata.resourceVersion;
  const store = managedStore([cacheOf(malformed)]);
  assert.throws(() => store.get({ namespace: 'team-a', name: 'w' }));
  assert.throws(() => parseManaged(widget({ name: 'x', uid: 'u', status: { conditions: 'no' } })));
  assert.equal(parseManaged(undefined), undefined);
});
