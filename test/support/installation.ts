// The operator installed into a test control plane (by the chart or the plain manifests), and a kubeconfig
// that authenticates as its ServiceAccount: run the operator with it to prove the install's RBAC is all
// the operator needs.
import { CoreV1Api, type V1Deployment } from '@kubernetes/client-node';
import { loadAll } from 'js-yaml';
import type { ControlPlane } from '../../src/local/controlplane.ts';

export interface Installation {
  /** The release name, which is also the fullname of every object. */
  release: string;
  namespace: string;
  /** The operator's ServiceAccount, in `namespace`. */
  serviceAccount: string;
  /** Authenticates as the ServiceAccount (a TokenRequest token, valid for an hour). */
  kubeconfigPath: string;
}

const TOKEN_SECONDS = 3600;

/** A kubeconfig for ServiceAccount `namespace/name`, with a token the apiserver issues for it. */
export async function serviceAccountKubeconfig(
  plane: ControlPlane,
  namespace: string,
  name: string,
): Promise<string> {
  const core = plane.kubeConfig.makeApiClient(CoreV1Api);
  const request = await core.createNamespacedServiceAccountToken({
    name,
    namespace,
    body: { spec: { audiences: [], expirationSeconds: TOKEN_SECONDS } },
  });
  const token = request.status?.token;
  if (!token) throw new Error(`the apiserver issued no token for ServiceAccount ${namespace}/${name}`);
  return plane.kubeconfigForToken(token, `${namespace}.${name}`);
}

/** The identity the operator Deployment of installed manifests runs as. */
export function serviceAccountOf(manifest: string): string {
  const objects = loadAll(manifest) as Array<V1Deployment | null>;
  const name = objects.find((object) => object?.kind === 'Deployment')?.spec?.template.spec
    ?.serviceAccountName;
  if (!name) throw new Error('the installed manifests have no Deployment with a serviceAccountName');
  return name;
}
