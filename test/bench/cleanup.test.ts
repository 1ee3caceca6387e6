// The benchmark's cleanup against a real apiserver: pages of labelled objects, some held by the operator's
// finalizer with no operator running (as after the raw loop that makes the operator's writes), all gone
// when it returns.
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { z } from 'zod';
import { deletePaged, PAGE_LABEL, paged } from '../../bench/cleanup.ts';
import { gpuPod, names } from '../../bench/manifests.ts';
import { createResource } from '../../bench/session.ts';
import { RESOURCES } from '../../bench/stack.ts';
import { KubeClient, type KubeRequest } from '../../src/kube/client.ts';
import { collectionPath, objectPath } from '../../src/kube/resource-type.ts';
import { FINALIZER } from '../../src/managed/core/annotations.ts';
import { useControlPlane } from '../support/control-plane.ts';
import { installCrds } from '../support/crds.ts';
import { createNamespace } from '../support/kube.ts';

const controlPlane = useControlPlane();

/** The real client, keeping a note of every request it sends. */
class RecordingClient extends KubeClient {
  readonly sent: KubeRequest[] = [];
  override request<S extends z.ZodType>(schema: S, request: KubeRequest): Promise<z.output<S>> {
    this.sent.push(request);
    return super.request(schema, request);
  }
}

const list = z.object({ items: z.array(z.object({ metadata: z.object({ name: z.string() }) })) });

describe('the benchmark cleanup', () => {
  let kube: RecordingClient;
  before(async () => {
    await installCrds(controlPlane().connection);
    kube = new RecordingClient(controlPlane().connection);
  });

  test('deletes page by page, releases what a finalizer holds, deletes what no page held, and returns when nothing is left', async () => {
    const namespace = await createNamespace(kube, 'cleanup');
    const manifests = names('raw', 7).map((name, index) => paged(gpuPod(name), index, 3));
    for (const manifest of manifests) await createResource(kube, namespace, manifest);
    // One made without a page label: found by the list after the pages, deleted by name.
    await createResource(kube, namespace, gpuPod('stray'));
    // What the equal-writes raw loop leaves: the operator's finalizer on objects no operator watches.
    for (const manifest of manifests.slice(2, 5)) {
      await kube.request(z.unknown(), {
        method: 'PATCH',
        path: objectPath(RESOURCES.gpuPod, { namespace, name: manifest.name }),
        body: { metadata: { finalizers: [FINALIZER] } },
      });
    }
    kube.sent.length = 0;

    await deletePaged(kube, RESOURCES.gpuPod, namespace, { count: 7, concurrency: 2, pageSize: 3 });

    const left = await kube.request(list, {
      method: 'GET',
      path: collectionPath(RESOURCES.gpuPod, namespace),
    });
    assert.deepEqual(left.items, []);
    const collectionDeletes = kube.sent.filter(
      (request) =>
        request.method === 'DELETE' && request.path === collectionPath(RESOURCES.gpuPod, namespace),
    );
    assert.deepEqual(collectionDeletes.map((request) => request.query?.labelSelector).sort(), [
      `${PAGE_LABEL}=0`,
      `${PAGE_LABEL}=1`,
      `${PAGE_LABEL}=2`,
    ]);
  });
});
