import { KubeConfig } from '@kubernetes/client-node';
import { z } from 'zod';
import type { KubeClient } from '../../src/kube/client.ts';
import type { KubeConnection } from '../../src/kube/connection.ts';
import { kubeObjectSchema } from '../../src/kube/object.ts';
import { collectionPath, configMaps, objectPath } from '../../src/kube/resource-type.ts';
import type { ControlPlane } from '../../src/local/controlplane.ts';

export const configMapSchema = kubeObjectSchema.extend({ data: z.record(z.string(), z.string()).optional() });
export type ConfigMap = z.infer<typeof configMapSchema>;

/** The same credentials, but through another server URL (a proxy in front of the apiserver). */
export function connectionVia(plane: ControlPlane, server: string): KubeConnection {
  const { source, auth } = plane.connection;
  return { server, source, auth };
}

/** `connectionVia` for client-node, whose kubeconfig the chaos suite writes for an operator process. */
export function kubeConfigVia(base: KubeConfig, server: string): KubeConfig {
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromOptions({
    clusters: base.clusters.map((cluster) => ({ ...cluster, server })),
    users: base.users,
    contexts: base.contexts,
    currentContext: base.currentContext,
  });
  return kubeConfig;
}

let namespaces = 0;

/** A fresh namespace, so tests sharing one control plane never see each other's objects. */
export async function createNamespace(client: KubeClient, prefix: string): Promise<string> {
  const name = `${prefix}-${process.pid}-${++namespaces}`;
  await client.request(kubeObjectSchema, {
    method: 'POST',
    path: '/api/v1/namespaces',
    body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name } },
  });
  return name;
}

export function createConfigMap(
  client: KubeClient,
  namespace: string,
  name: string,
  data: Record<string, string> = {},
  labels: Record<string, string> = {},
): Promise<ConfigMap> {
  return client.request(configMapSchema, {
    method: 'POST',
    path: collectionPath(configMaps, namespace),
    body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace, labels }, data },
  });
}

export function patchConfigMap(
  client: KubeClient,
  namespace: string,
  name: string,
  data: Record<string, string>,
): Promise<ConfigMap> {
  return client.request(configMapSchema, {
    method: 'PATCH',
    path: objectPath(configMaps, { namespace, name }),
    body: { data },
  });
}

export async function deleteConfigMap(client: KubeClient, namespace: string, name: string): Promise<void> {
  await client.request(z.unknown(), { method: 'DELETE', path: objectPath(configMaps, { namespace, name }) });
}
