import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { KubeApiError } from '../../src/kube/client.ts';
import { collectionPath, objectPath, secrets } from '../../src/kube/resource-type.ts';
import type { ManagedObject } from '../../src/managed/core/external-kind.ts';
import { CONNECTION_SECRET_TYPE, managedWriter } from '../../src/managed/core/writer.ts';
import { FakeApiserver, widgets } from './fake-apiserver.ts';

const NAMESPACE = 'team-a';

function world() {
  const api = new FakeApiserver();
  const writer = managedWriter(api, widgets);
  const pathOf = (name: string) => objectPath(widgets, { namespace: NAMESPACE, name });
  const create = (name: string, extra: Record<string, unknown> = {}) =>
    api.put(pathOf(name), {
      apiVersion: 'example.com/v1',
      kind: 'Widget',
      metadata: { name, namespace: NAMESPACE, ...extra },
      spec: { size: 1 },
    }) as unknown as ManagedObject<unknown>;
  const stored = (name: string) => api.get(pathOf(name)) as unknown as ManagedObject<unknown> | undefined;
  const at = (mr: ManagedObject<unknown>, resourceVersion: string) => ({
    ...mr,
    metadata: { ...mr.metadata, resourceVersion },
  });
  return { api, writer, pathOf, create, stored, at };
}

const statusOf = (error: unknown) => (error instanceof KubeApiError ? error.status : error);

describe('the managed writer on a fake that answers as the apiserver does', () => {
  describe('status', () => {
    test('replaces the status whole on the version read, and answers the version it made', async () => {
      const { writer, create, stored } = world();
      const mr = create('w');
      const first = await writer.patchStatus(mr, { phase: 'RUNNING', id: '1', ports: '22' });
      assert.notEqual(first, mr.metadata.resourceVersion);
      assert.equal(stored('w')?.metadata.resourceVersion, first);
      const second = await writer.patchStatus(
        { ...mr, metadata: { ...mr.metadata, resourceVersion: first } },
        {
          phase: 'PAUSED',
          id: '1',
        },
      );
      // A field the cloud no longer reports goes: a merge would have kept `ports`.
      assert.deepEqual(stored('w')?.status, { phase: 'PAUSED', id: '1' });
      assert.equal(stored('w')?.metadata.resourceVersion, second);
    });

    test('a status derived from a stale copy is a 409 and leaves the newer status standing', async () => {
      const { writer, create, stored, at } = world();
      const mr = create('w');
      const newer = await writer.patchStatus(mr, { phase: 'RUNNING' });
      await assert.rejects(
        writer.patchStatus(mr, { phase: 'INITIALIZING' }),
        (error) => statusOf(error) === 409,
      );
      assert.deepEqual(stored('w')?.status, { phase: 'RUNNING' });
      assert.equal(stored('w')?.metadata.resourceVersion, newer);
      assert.ok(await writer.patchStatus(at(mr, newer), { phase: 'PAUSED' }));
    });

    test('sends the turn’s signal: an aborted turn writes nothing', async () => {
      const { writer, create, stored } = world();
      const mr = create('w');
      const turn = new AbortController();
      turn.abort();
      await assert.rejects(writer.patchStatus(mr, { phase: 'RUNNING' }, turn.signal));
      assert.equal(stored('w')?.status, undefined);
    });
  });

  describe('metadata', () => {
    test('merges annotations (null removes one) and answers the metadata as stored', async () => {
      const { writer, create, stored } = world();
      const mr = create('w', { annotations: { keep: 'a', drop: 'b' } });
      const metadata = await writer.patchObject(mr, { annotations: { drop: null, added: 'c' } });
      assert.deepEqual(metadata.annotations, { keep: 'a', added: 'c' });
      assert.deepEqual(stored('w')?.metadata.annotations, { keep: 'a', added: 'c' });
      assert.equal(metadata.resourceVersion, stored('w')?.metadata.resourceVersion);
    });

    test('an annotation patch lands on a copy made stale by another writer, unless it must not', async () => {
      const { api, writer, create, stored, pathOf } = world();
      const mr = create('w');
      api.beforeNext = () => api.put(pathOf('w'), { ...api.get(pathOf('w')), metadata: mr.metadata });
      await writer.patchObject(mr, { annotations: { note: 'x' } });
      assert.equal(stored('w')?.metadata.annotations?.note, 'x');
      const other = create('v');
      api.beforeNext = () => api.put(pathOf('v'), { ...api.get(pathOf('v')), metadata: other.metadata });
      await assert.rejects(
        writer.patchObject(other, { annotations: { note: 'x' }, ifUnchanged: true }),
        (error) => statusOf(error) === 409,
      );
      assert.equal(stored('v')?.metadata.annotations, undefined);
    });

    test('a finalizer change is conditional on the version read: a concurrent change is never overwritten', async () => {
      const { api, writer, create, stored, pathOf } = world();
      const mr = create('w');
      api.beforeNext = () =>
        api.put(pathOf('w'), {
          ...api.get(pathOf('w')),
          metadata: { ...mr.metadata, finalizers: ['someone.else/keep'] },
        });
      await assert.rejects(
        writer.patchObject(mr, { finalizers: ['gpucloud.io/finalizer'] }),
        (error) => statusOf(error) === 409,
      );
      assert.deepEqual(stored('w')?.metadata.finalizers, ['someone.else/keep']);
      const fresh = stored('w');
      assert.ok(fresh);
      const metadata = await writer.patchObject(fresh, {
        finalizers: ['someone.else/keep', 'gpucloud.io/finalizer'],
      });
      assert.deepEqual(metadata.finalizers, ['someone.else/keep', 'gpucloud.io/finalizer']);
    });

    test('late-initialised spec fields go in the same write', async () => {
      const { writer, create, stored } = world();
      const mr = create('w');
      await writer.patchObject(mr, { annotations: { filled: 'true' }, spec: { region: 'eu' } });
      assert.deepEqual(stored('w')?.spec, { size: 1, region: 'eu' });
      assert.equal(stored('w')?.metadata.annotations?.filled, 'true');
    });

    test('a patch meant for a deleted resource is a 404 and never lands on a new one of its name', async () => {
      const { writer, create, stored } = world();
      const old = create('w');
      const reborn = create('w');
      const refused = await writer.patchObject(old, { annotations: { id: '42' } }).catch((error) => error);
      assert.ok(refused instanceof KubeApiError);
      assert.equal(refused.status, 404);
      assert.equal(refused.reason, 'NotFound');
      assert.match(refused.message, /deleted and a new one of that name took its place/);
      assert.equal(stored('w')?.metadata.resourceVersion, reborn.metadata.resourceVersion);
    });

    test('any other refusal passes as it came', async () => {
      const { writer, create } = world();
      const mr = create('w');
      await assert.rejects(
        writer.patchObject(
          { ...mr, metadata: { ...mr.metadata, name: 'absent' } },
          { annotations: { a: 'b' } },
        ),
        (error) =>
          error instanceof KubeApiError && error.status === 404 && !/took its place/.test(error.message),
      );
    });
  });

  describe('own writes', () => {
    test('an update that is exactly its own metadata patch is recognised, once', async () => {
      const { writer, create } = world();
      const mr = create('w');
      const from = mr.metadata.resourceVersion;
      const { resourceVersion } = await writer.patchObject(mr, { annotations: { a: 'b' } });
      assert.equal(writer.isOwnWrite(from, resourceVersion), true);
      assert.equal(writer.isOwnWrite(from, resourceVersion), false, 'each version is answered once');
    });

    test('an update that spans someone else’s change too is not its own', async () => {
      const { writer, create } = world();
      const mr = create('w');
      const { resourceVersion } = await writer.patchObject(mr, { annotations: { a: 'b' } });
      assert.equal(writer.isOwnWrite('1', resourceVersion), false);
      assert.equal(writer.isOwnWrite(mr.metadata.resourceVersion, '999999'), false);
    });

    test('a status write is no metadata patch: its event is not skipped', async () => {
      const { writer, create } = world();
      const mr = create('w');
      const version = await writer.patchStatus(mr, { phase: 'RUNNING' });
      assert.equal(writer.isOwnWrite(mr.metadata.resourceVersion, version), false);
    });

    test('a gone resource’s patches are forgotten: the event of its last one never comes', async () => {
      const { writer, create } = world();
      const gone = create('gone');
      const kept = create('kept');
      const { resourceVersion: last } = await writer.patchObject(gone, { annotations: { a: 'b' } });
      const { resourceVersion: other } = await writer.patchObject(kept, { annotations: { a: 'b' } });
      assert.equal(writer.size, 2);
      writer.forget(gone.metadata.uid);
      assert.equal(writer.size, 1, 'only the live resource is remembered');
      assert.equal(writer.isOwnWrite(gone.metadata.resourceVersion, last), false);
      assert.equal(writer.isOwnWrite(kept.metadata.resourceVersion, other), true, 'another’s untouched');
      assert.equal(writer.size, 0, 'an event that came frees its entry');
    });

    test('the memory of own writes is bounded: the oldest is forgotten first', async () => {
      const { writer, create, at } = world();
      let mr = create('w');
      const first = mr.metadata.resourceVersion;
      const { resourceVersion: firstOwn } = await writer.patchObject(mr, { annotations: { n: '0' } });
      mr = at(mr, firstOwn);
      const second = mr.metadata.resourceVersion;
      const { resourceVersion: secondOwn } = await writer.patchObject(mr, { annotations: { n: '1' } });
      mr = at(mr, secondOwn);
      for (let n = 2; n <= 10_000; n += 1) {
        mr = at(mr, (await writer.patchObject(mr, { annotations: { n: String(n) } })).resourceVersion);
      }
      assert.equal(writer.isOwnWrite(first, firstOwn), false, 'the 10,001st write pushed out the first');
      assert.equal(writer.isOwnWrite(second, secondOwn), true, 'the second is still remembered');
    });
  });

  describe('deletion', () => {
    test('deletes the resource as it was read, never a newer version or a new resource of its name', async () => {
      const { writer, create, stored, at } = world();
      const mr = create('w');
      const newer = await writer.patchStatus(mr, { phase: 'RUNNING' });
      await assert.rejects(writer.deleteObject(mr), (error) => statusOf(error) === 409);
      assert.ok(stored('w'), 'a stale copy deletes nothing');
      const old = at(mr, newer);
      const reborn = create('w');
      await assert.rejects(writer.deleteObject(old), (error) => statusOf(error) === 409);
      assert.equal(stored('w')?.metadata.uid, reborn.metadata.uid);
      await writer.deleteObject(reborn);
      assert.equal(stored('w'), undefined);
    });
  });

  describe('secrets', () => {
    const secretPath = (name: string) => objectPath(secrets, { namespace: NAMESPACE, name });
    const decoded = (data: unknown) =>
      Object.fromEntries(
        Object.entries(data as Record<string, string>).map(([key, value]) => [
          key,
          Buffer.from(value, 'base64').toString('utf8'),
        ]),
      );

    test('reads a Secret decoded, and nothing for one that does not exist', async () => {
      const { api, writer } = world();
      api.put(secretPath('key'), {
        metadata: { name: 'key', namespace: NAMESPACE },
        data: { token: Buffer.from('s3cret').toString('base64') },
      });
      assert.deepEqual(await writer.readSecret(NAMESPACE, 'key'), { token: 's3cret' });
      assert.equal(await writer.readSecret(NAMESPACE, 'absent'), undefined);
    });

    test('creates the connection Secret owned by the resource, garbage-collected with it', async () => {
      const { api, writer, create } = world();
      const mr = create('w');
      assert.equal(await writer.writeOwnedSecret(mr, 'conn', { host: '10.0.0.1', port: '22' }), 'written');
      const secret = api.get(secretPath('conn'));
      assert.equal(secret?.type, 'connection.gpucloud.io/v1');
      assert.equal(CONNECTION_SECRET_TYPE, secret?.type);
      assert.deepEqual(decoded(secret?.data), { host: '10.0.0.1', port: '22' });
      assert.deepEqual(secret?.metadata.ownerReferences, [
        {
          apiVersion: 'example.com/v1',
          kind: 'Widget',
          name: 'w',
          uid: mr.metadata.uid,
          controller: true,
          blockOwnerDeletion: false,
        },
      ]);
      const post = api.requests.find((request) => request.method === 'POST');
      assert.equal(post?.path, collectionPath(secrets, NAMESPACE));
    });

    test('updates its own Secret, removing keys no longer reported', async () => {
      const { api, writer, create } = world();
      const mr = create('w');
      await writer.writeOwnedSecret(mr, 'conn', { host: '10.0.0.1', port: '22' });
      assert.equal(await writer.writeOwnedSecret(mr, 'conn', { host: '10.0.0.2' }), 'written');
      assert.deepEqual(decoded(api.get(secretPath('conn'))?.data), { host: '10.0.0.2' });
    });

    test('the update is conditional on what was read: a change in between is a 409, never lost', async () => {
      const { api, writer, create } = world();
      const mr = create('w');
      await writer.writeOwnedSecret(mr, 'conn', { host: '10.0.0.1' });
      const requests = api.requests.length;
      // Another writer's change lands between the writer's read of the Secret and its patch.
      api.afterNext = () => {
        const current = api.get(secretPath('conn'));
        api.put(secretPath('conn'), { ...current, data: { host: 'MTAuMC4wLjE=', extra: 'eA==' } });
      };
      await assert.rejects(
        writer.writeOwnedSecret(mr, 'conn', { host: '10.0.0.2' }),
        (error) => statusOf(error) === 409,
      );
      assert.equal(api.requests.length, requests + 2, 'one read, one refused patch');
      assert.deepEqual(decoded(api.get(secretPath('conn'))?.data), { host: '10.0.0.1', extra: 'x' });
    });

    test('a Secret of that name the resource does not control is left alone', async () => {
      const { api, writer, create } = world();
      const mr = create('w');
      api.put(secretPath('theirs'), {
        metadata: {
          name: 'theirs',
          namespace: NAMESPACE,
          // The resource is an owner, but not the controller: only the controller's Secret is its own.
          ownerReferences: [{ uid: mr.metadata.uid }, { uid: 'someone-else', controller: true }],
        },
        data: { mine: 'eA==' },
      });
      const before = api.get(secretPath('theirs'));
      assert.equal(await writer.writeOwnedSecret(mr, 'theirs', { host: '10.0.0.1' }), 'not-owned');
      assert.deepEqual(api.get(secretPath('theirs')), before);
      api.put(secretPath('unowned'), { metadata: { name: 'unowned', namespace: NAMESPACE }, data: {} });
      assert.equal(await writer.writeOwnedSecret(mr, 'unowned', { host: '10.0.0.1' }), 'not-owned');
    });
  });
});
