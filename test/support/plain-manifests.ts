// The plain manifests applied to a test control plane with kubectl, file after file, as docs/install.md
// says, with a kubeconfig as their ServiceAccount.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ControlPlane } from '../../src/local/controlplane.ts';
import {
  DEFAULT_NAMESPACE,
  DEFAULT_RELEASE,
  PLAIN_MANIFESTS,
  REPO_ROOT,
} from '../../tools/helm/artifacts.ts';
import { type Installation, serviceAccountKubeconfig, serviceAccountOf } from './installation.ts';
import { kubectl } from './kubectl.ts';

/**
 * `kubectl apply --server-side -f` of the plain manifests, then of each of `after` (paths from the
 * repository root), in order.
 */
export async function applyPlainManifests(
  plane: ControlPlane,
  after: readonly string[] = [],
): Promise<Installation> {
  for (const file of [PLAIN_MANIFESTS, ...after]) {
    await kubectl(plane, 'apply', '--server-side', '-f', join(REPO_ROOT, file));
  }
  const serviceAccount = serviceAccountOf(await readFile(join(REPO_ROOT, PLAIN_MANIFESTS), 'utf8'));
  return {
    release: DEFAULT_RELEASE,
    namespace: DEFAULT_NAMESPACE,
    serviceAccount,
    kubeconfigPath: await serviceAccountKubeconfig(plane, DEFAULT_NAMESPACE, serviceAccount),
  };
}
