// The operator runs in the benchmark as it runs in a pod: on the service-account path, with a token the
// local apiserver issued, so its memory figures are the ones users get (client-node is never loaded).
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { load } from 'js-yaml';
import { z } from 'zod';
import { KubeClient } from '../src/kube/client.ts';
import { SERVICE_ACCOUNT_DIR_ENV } from '../src/kube/in-cluster.ts';
import type { ControlPlane } from '../src/local/controlplane.ts';
import { bindClusterAdmin } from '../test/support/impersonation.ts';

const NAMESPACE = 'default';
const NAME = 'bench-operator';

const kubeconfigCa = z.object({
  clusters: z.tuple([z.object({ cluster: z.object({ 'certificate-authority-data': z.string() }) })]),
});
const tokenRequest = z.object({ status: z.object({ token: z.string().min(1) }) });

/** The environment that puts the operator on the in-cluster path of `plane`, as a ServiceAccount. */
export async function inClusterEnv(plane: ControlPlane): Promise<Record<string, string>> {
  const admin = new KubeClient(plane.connection);
  await admin.request(z.unknown(), {
    method: 'POST',
    path: `/api/v1/namespaces/${NAMESPACE}/serviceaccounts`,
    body: { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: NAME } },
  });
  // The benchmark measures speed, not permissions (the chart tests prove those): cluster-admin.
  await bindClusterAdmin(admin, NAME, { namespace: NAMESPACE, name: NAME });
  const issued = await admin.request(tokenRequest, {
    method: 'POST',
    path: `/api/v1/namespaces/${NAMESPACE}/serviceaccounts/${NAME}/token`,
    body: {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec: { expirationSeconds: 4 * 3600 },
    },
  });
  const ca = kubeconfigCa.parse(load(await readFile(plane.kubeconfigPath, 'utf8'))).clusters[0].cluster;
  const dir = await mkdtemp(join(tmpdir(), 'bench-serviceaccount-'));
  await writeFile(join(dir, 'token'), issued.status.token);
  await writeFile(join(dir, 'ca.crt'), Buffer.from(ca['certificate-authority-data'], 'base64'));
  const server = new URL(plane.server);
  return {
    KUBERNETES_SERVICE_HOST: server.hostname,
    KUBERNETES_SERVICE_PORT: server.port,
    [SERVICE_ACCOUNT_DIR_ENV]: dir,
    // No kubeconfig to find: HOME points where there is none.
    HOME: dir,
  };
}
