import type { KubeConfig } from '@kubernetes/client-node';
import { KubeClient } from '../../src/kube/client.ts';
import type { KubeConnection } from '../../src/kube/connection.ts';
import { kubeConfigConnection } from '../../src/kube/kubeconfig.ts';
import { installCrds as install } from '../../src/local/manifests.ts';

const CRD_DIR = new URL('../../crds/', import.meta.url).pathname;

/**
 * Applies the committed CRDs (crds/*.yaml) with server-side apply and waits until the apiserver
 * serves every one of them. Idempotent: suites sharing a control plane may each call it.
 *
 * A client-node `KubeConfig` is still accepted because bench/ and chaos/ pass `plane.kubeConfig`.
 */
export async function installCrds(target: KubeConnection | KubeConfig, timeoutMs = 30_000): Promise<void> {
  await install(new KubeClient(connectionOf(target)), CRD_DIR, timeoutMs);
}

/** The operator's connection for a client-node `KubeConfig`, through the kubeconfig text it exports. */
export function connectionOf(target: KubeConnection | KubeConfig): KubeConnection {
  return 'auth' in target ? target : kubeConfigConnection(target, 'client-node KubeConfig');
}
