import { z } from 'zod';
import { isStatus, type KubeClient } from '../src/kube/client.ts';
import { collectionPath, objectPath, type ResourceType } from '../src/kube/resource-type.ts';
import type { Logger } from '../src/lib/logger.ts';
import type { Manifest } from './manifests.ts';
import type { BenchOptions } from './options.ts';
import type { Stack } from './stack.ts';

/** What every phase of one run shares. */
export interface Session {
  readonly stack: Stack;
  readonly options: BenchOptions;
  readonly log: Logger;
  /** etcd and kube-apiserver, for their CPU. */
  readonly controlPlanePids: readonly number[];
  /** The operator's entry point: the compiled build, or the TypeScript sources. */
  readonly operatorEntry: string;
}

const created = z.looseObject({ metadata: z.looseObject({ name: z.string(), resourceVersion: z.string() }) });

export async function ensureNamespace(kube: KubeClient, name: string): Promise<void> {
  try {
    await kube.request(z.unknown(), {
      method: 'POST',
      path: '/api/v1/namespaces',
      body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name } },
    });
  } catch (error) {
    if (!isStatus(error, 409)) throw error;
  }
}

/** Creates the resource and answers its resourceVersion. */
export async function createResource(
  kube: KubeClient,
  namespace: string,
  manifest: Manifest,
): Promise<string> {
  const object = await kube.request(created, {
    method: 'POST',
    path: collectionPath(manifest.resource, namespace),
    body: manifest.body,
  });
  return object.metadata.resourceVersion;
}

export async function deleteResource(
  kube: KubeClient,
  resource: ResourceType,
  namespace: string,
  name: string,
): Promise<void> {
  try {
    await kube.request(z.unknown(), { method: 'DELETE', path: objectPath(resource, { namespace, name }) });
  } catch (error) {
    if (!isStatus(error, 404)) throw error;
  }
}
