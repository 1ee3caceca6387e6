// Removing what a phase made, in requests the apiserver answers well within its 60 s request limit. One
// DELETE of a collection of 10,000 GpuPods ran past it (504): the apiserver deletes a collection's items
// one after another. So the objects carry a page label from their creation, each page is deleted by its
// own request, objects a finalizer holds are released, and the cleanup ends only when none is left.
import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { isStatus, type KubeClient } from '../src/kube/client.ts';
import { collectionPath, objectPath, type ResourceType } from '../src/kube/resource-type.ts';
import type { Manifest } from './manifests.ts';
import { forEachConcurrently } from './parallel.ts';
import { deleteResource } from './session.ts';

export const PAGE_LABEL = 'bench.gpucloud.io/page';
/** Objects per page: a DELETE of 500 takes a few seconds even when the apiserver is busy. */
export const PAGE_SIZE = 500;
/** Pages deleted at once: the apiserver works through each page's items one at a time. */
const PAGE_CONCURRENCY = 4;
const GONE_TIMEOUT_MS = 10 * 60_000;
const GONE_POLL_MS = 250;

/** The manifest with the label of the page its index falls in. */
export function paged(manifest: Manifest, index: number, pageSize = PAGE_SIZE): Manifest {
  const metadata = (manifest.body.metadata ?? {}) as Record<string, unknown>;
  const labels = (metadata.labels ?? {}) as Record<string, string>;
  return {
    ...manifest,
    body: {
      ...manifest.body,
      metadata: { ...metadata, labels: { ...labels, [PAGE_LABEL]: String(Math.floor(index / pageSize)) } },
    },
  };
}

const listed = z.object({
  metadata: z.object({ continue: z.string().optional() }),
  items: z.array(
    z.object({
      metadata: z.object({
        name: z.string(),
        finalizers: z.array(z.string()).optional(),
        deletionTimestamp: z.string().optional(),
      }),
    }),
  ),
});

export interface CleanupOptions {
  /** How many objects were made with `paged()`: their pages are deleted. */
  count: number;
  /** Concurrency of the finalizer releases. */
  concurrency: number;
  pageSize?: number;
}

/** Deletes every object of `resource` in `namespace`, page by page, and waits until none is left. */
export async function deletePaged(
  kube: KubeClient,
  resource: ResourceType,
  namespace: string,
  options: CleanupOptions,
): Promise<void> {
  const pageSize = options.pageSize ?? PAGE_SIZE;
  const pages = Array.from({ length: Math.ceil(options.count / pageSize) }, (_, page) => page);
  await forEachConcurrently(pages, PAGE_CONCURRENCY, async (page) => {
    await kube.request(z.unknown(), {
      method: 'DELETE',
      path: collectionPath(resource, namespace),
      query: { labelSelector: `${PAGE_LABEL}=${page}` },
      // The apiserver's own limit (60 s) is what a page must stay within; the client waits as long.
      timeoutMs: 60_000,
    });
  });
  // Anything left is held by a finalizer (nothing runs here to remove it) or was not labelled: release and
  // delete it by name.
  const left = await listAll(kube, resource, namespace, pageSize);
  await forEachConcurrently(left, options.concurrency, async ({ metadata }) => {
    if (metadata.finalizers?.length)
      await release(kube, objectPath(resource, { namespace, name: metadata.name }));
    // Released from a deletion already asked for, it is gone; one not yet asked for is deleted now.
    if (!metadata.deletionTimestamp) await deleteResource(kube, resource, namespace, metadata.name);
  });
  await waitUntilEmpty(kube, resource, namespace);
}

/** Removes every finalizer of the object; one already gone needs none removed. */
async function release(kube: KubeClient, path: string): Promise<void> {
  try {
    await kube.request(z.unknown(), {
      method: 'PATCH',
      path,
      patchType: 'application/merge-patch+json',
      body: { metadata: { finalizers: null } },
    });
  } catch (error) {
    if (!isStatus(error, 404)) throw error;
  }
}

async function listAll(kube: KubeClient, resource: ResourceType, namespace: string, limit: number) {
  const items: z.output<typeof listed>['items'] = [];
  let token: string | undefined;
  do {
    const page = await kube.request(listed, {
      method: 'GET',
      path: collectionPath(resource, namespace),
      query: { limit, ...(token ? { continue: token } : {}) },
    });
    items.push(...page.items);
    token = page.metadata.continue || undefined;
  } while (token);
  return items;
}

async function waitUntilEmpty(kube: KubeClient, resource: ResourceType, namespace: string): Promise<void> {
  const deadline = Date.now() + GONE_TIMEOUT_MS;
  for (;;) {
    const { items } = await kube.request(listed, {
      method: 'GET',
      path: collectionPath(resource, namespace),
      query: { limit: 1 },
    });
    if (items.length === 0) return;
    if (Date.now() > deadline) {
      throw new Error(
        `${resource.plural} in ${namespace} still exist ${GONE_TIMEOUT_MS / 1000} s after their deletion`,
      );
    }
    await sleep(GONE_POLL_MS);
  }
}
