import type { KubeConfig } from '@kubernetes/client-node';
import { installCrds as install } from '../../src/local/manifests.ts';
import { KubeClient } from '../../src/runtime/kube-client.ts';

const CRD_DIR = new URL('../../crds/', import.meta.url).pathname;

/**
 * Applies the committed CRDs (crds/*.yaml) with server-side apply and waits until the apiserver
 * serves every one of them. Idempotent: suites sharing a control plane may each call it.
 */
export async function installCrds(kubeConfig: KubeConfig, timeoutMs = 30_000): Promise<void> {
  await install(new KubeClient(kubeConfig), CRD_DIR, timeoutMs);
}
