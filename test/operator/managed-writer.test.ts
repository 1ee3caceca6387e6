import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { z } from 'zod';
import { KubeApiError, KubeClient } from '../../src/kube/client.ts';
import { collectionPath, objectPath, type ResourceType } from '../../src/kube/resource-type.ts';
import { managedEnvelope } from '../../src/managed/core/store.ts';
import { managedWriter } from '../../src/managed/core/writer.ts';
import { API_VERSION, GROUP, gpuPodKind, VERSION } from '../../src/resources/kinds.ts';
import { useControlPlane } from '../support/control-plane.ts';
import { installCrds } from '../support/crds.ts';
import { createNamespace } from '../support/kube.ts';

const plane = useControlPlane();
const gpuPods: ResourceType = {
  group: GROUP,
  version: VERSION,
  plural: gpuPodKind.plural,
  kind: gpuPodKind.kind,
  namespaced: true,
};

describe('managedWriter against a real apiserver', () => {
  let client: KubeClient;
  let namespace: string;
  before(async () => {
    await installCrds(plane().connection);
    client = new KubeClient(plane().connection);
    namespace = await createNamespace(client, 'writer');
  });

  const createPod = (name: string) =>
    client.request(managedEnvelope, {
      method: 'POST',
      path: collectionPath(gpuPods, namespace),
      body: {
        apiVersion: API_VERSION,
        kind: gpuPodKind.kind,
        metadata: { name, namespace },
        spec: { image: 'pytorch/pytorch:2.4.0', gpuType: 'NVIDIA L40S', gpuCount: 1 },
      },
    });

  /** Someone else's metadata change, as a user's kubectl would make it. */
  const patchByUser = (created: { metadata: { namespace: string; name: string } }, metadata: object) =>
    client.request(managedEnvelope, {
      method: 'PATCH',
      path: objectPath(gpuPods, created.metadata),
      body: { metadata },
    });

  test('an update that is exactly its own metadata patch is recognised, once', async () => {
    const writer = managedWriter(client, gpuPods);
    const created = await createPod('own');
    const from = created.metadata.resourceVersion;
    const patched = await writer.patchObject(created, { annotations: { 'example.com/note': 'x' } });
    assert.notEqual(patched.resourceVersion, from);
    assert.equal(writer.isOwnWrite(from, patched.resourceVersion), true);
    assert.equal(writer.isOwnWrite(from, patched.resourceVersion), false, 'each version is answered once');
  });

  test('a patch meant for a deleted resource never lands on a new one of the same name', async () => {
    const writer = managedWriter(client, gpuPods);
    const first = await createPod('reborn');
    await client.request(z.unknown(), { method: 'DELETE', path: objectPath(gpuPods, first.metadata) });
    const second = await createPod('reborn');
    await assert.rejects(
      writer.patchObject(first, { annotations: { 'gpucloud.io/external-id': '42' } }),
      (error: unknown) => error instanceof KubeApiError && error.status === 404,
    );
    const now = await client.request(managedEnvelope, {
      method: 'GET',
      path: objectPath(gpuPods, second.metadata),
    });
    assert.equal(now.metadata.annotations?.['gpucloud.io/external-id'], undefined);
    assert.equal(now.metadata.resourceVersion, second.metadata.resourceVersion, 'untouched');
  });

  test("an update that also carries someone else's change is not its own", async () => {
    const writer = managedWriter(client, gpuPods);
    const created = await createPod('theirs');
    // A user's change lands between the writer's read and its patch; a relist would show both as one.
    const theirs = await patchByUser(created, { labels: { team: 'research' } });
    const patched = await writer.patchObject(created, { annotations: { 'example.com/note': 'x' } });
    // The watch reports it as theirs → patched: the label change would be lost if that were skipped.
    assert.equal(writer.isOwnWrite(theirs.metadata.resourceVersion, patched.resourceVersion), false);
  });

  test('a version the writer did not make is not its own', async () => {
    const writer = managedWriter(client, gpuPods);
    const created = await createPod('other');
    const theirs = await patchByUser(created, { annotations: { 'example.com/note': 'y' } });
    assert.equal(writer.isOwnWrite(created.metadata.resourceVersion, theirs.metadata.resourceVersion), false);
  });

  test('a status write is conditional on the version it was derived from: a stale copy is a 409, and nothing lands', async () => {
    const writer = managedWriter(client, gpuPods);
    const created = await createPod('stale-status');
    const version = await writer.patchStatus(created, { phase: 'RUNNING', id: '1' });
    assert.notEqual(version, created.metadata.resourceVersion);
    // Chained: the next write carries the version the previous one made.
    const chained = await writer.patchStatus(
      { ...created, metadata: { ...created.metadata, resourceVersion: version } },
      { phase: 'PAUSED', id: '1' },
    );
    const refused = await writer.patchStatus(created, { phase: 'INITIALIZING' }).then(
      () => undefined,
      (error: unknown) => error,
    );
    assert.ok(refused instanceof KubeApiError, String(refused));
    assert.equal(refused.status, 409);
    const stored = await client.request(managedEnvelope, {
      method: 'GET',
      path: objectPath(gpuPods, created.metadata),
    });
    assert.equal(stored.status?.phase, 'PAUSED', 'the newer status stands');
    assert.equal(stored.metadata.resourceVersion, chained);
  });

  test('a status write for a deleted resource never lands on a new one of the same name', async () => {
    const writer = managedWriter(client, gpuPods);
    const old = await createPod('reborn-status');
    await client.request(z.unknown(), { method: 'DELETE', path: objectPath(gpuPods, old.metadata) });
    await createPod('reborn-status');
    const refused = await writer.patchStatus(old, { phase: 'RUNNING' }).then(
      () => undefined,
      (error: unknown) => error,
    );
    assert.ok(refused instanceof KubeApiError);
    assert.equal(refused.status, 409);
  });
});
