// metrics-server as a cluster runs it for `kubectl top`, against the local control plane: its own process,
// calling the nodes' kubelet APIs with its ServiceAccount's token on the port each node names, and
// registered with the apiserver as the metrics.k8s.io APIService (an ExternalName Service of localhost, as
// the tenant API's local registration does).
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import type { KubeClient } from '../../src/kube/client.ts';
import { createCertificateAuthority, issueCertificate } from '../../src/lib/x509.ts';
import { freeLoopbackPorts } from '../../src/local/controlplane/ports.ts';
import type { ControlPlane } from '../../src/local/controlplane.ts';
import { apply } from '../../src/local/manifests.ts';
import { ensureMetricsServer } from '../../tools/metrics-server/ensure.ts';
import { poll } from './until.ts';

const NAMESPACE = 'kube-system';
const NAME = 'metrics-server';

export interface RunningMetricsServer {
  /** What it wrote so far. */
  output(): string;
  stop(): Promise<void>;
}

/** The grants of metrics-server's own manifests (ClusterRole system:metrics-server). */
const RULES = [
  { apiGroups: [''], resources: ['nodes/metrics'], verbs: ['get'] },
  { apiGroups: [''], resources: ['pods', 'nodes'], verbs: ['get', 'list', 'watch'] },
];

export async function startMetricsServer(
  plane: ControlPlane,
  admin: KubeClient,
  /** The CA the nodes' serving certificates are signed by. */
  kubeletCaFile: string,
): Promise<RunningMetricsServer> {
  const binary = await ensureMetricsServer();
  const dir = join(plane.dataDir, NAME);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const token = await serviceAccountToken(admin);
  const kubeconfig = await plane.kubeconfigForToken(token, `${NAMESPACE}.${NAME}`);
  const ca = createCertificateAuthority('metrics-server-ca', 1);
  const serving = issueCertificate(ca, {
    commonName: `${NAME}.${NAMESPACE}.svc`,
    dnsNames: [`${NAME}.${NAMESPACE}.svc`, 'localhost'],
    ipAddresses: ['127.0.0.1'],
    usage: 'server',
    days: 1,
  });
  await writeFile(join(dir, 'tls.crt'), serving.certPem, { mode: 0o600 });
  await writeFile(join(dir, 'tls.key'), serving.keyPem, { mode: 0o600 });
  const [port = 0] = await freeLoopbackPorts(1);
  const child: ChildProcess = spawn(
    binary,
    [
      `--kubeconfig=${kubeconfig}`,
      // Delegated authentication and authorisation of the apiserver's requests, as an extension server.
      `--authentication-kubeconfig=${plane.kubeconfigPath}`,
      `--authorization-kubeconfig=${plane.kubeconfigPath}`,
      `--secure-port=${port}`,
      '--bind-address=127.0.0.1',
      `--tls-cert-file=${join(dir, 'tls.crt')}`,
      `--tls-private-key-file=${join(dir, 'tls.key')}`,
      // As metrics-server's own manifests run it.
      '--kubelet-use-node-status-port',
      '--kubelet-preferred-address-types=InternalIP',
      `--kubelet-certificate-authority=${kubeletCaFile}`,
      '--metric-resolution=10s',
      '--kubelet-request-timeout=5s',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const chunks: string[] = [];
  child.stdout?.on('data', (chunk: Buffer) => chunks.push(chunk.toString('utf8')));
  child.stderr?.on('data', (chunk: Buffer) => chunks.push(chunk.toString('utf8')));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await register(admin, port, ca.certPem).catch((error: Error) => {
    throw new Error(`${error.message}\nmetrics-server said:\n${chunks.join('').slice(-4000)}`);
  });
  return {
    output: () => chunks.join(''),
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

/** Its ServiceAccount, granted what its manifests grant, and a token of it. */
async function serviceAccountToken(admin: KubeClient): Promise<string> {
  await apply(admin, `/api/v1/namespaces/${NAMESPACE}/serviceaccounts`, {
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: { name: NAME, namespace: NAMESPACE },
  });
  await apply(admin, '/apis/rbac.authorization.k8s.io/v1/clusterroles', {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name: `system:${NAME}` },
    rules: RULES,
  });
  await apply(admin, '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: `system:${NAME}` },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: `system:${NAME}` },
    subjects: [{ kind: 'ServiceAccount', name: NAME, namespace: NAMESPACE }],
  });
  const answer = await admin.request(z.object({ status: z.object({ token: z.string() }) }), {
    method: 'POST',
    path: `/api/v1/namespaces/${NAMESPACE}/serviceaccounts/${NAME}/token`,
    body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 3600 } },
  });
  return answer.status.token;
}

const apiServiceSchema = z.looseObject({
  status: z
    .looseObject({ conditions: z.array(z.looseObject({ type: z.string(), status: z.string() })).optional() })
    .optional(),
});

/** The Service and the APIService of metrics.k8s.io, pointing at `port`; waits until it is Available. */
async function register(admin: KubeClient, port: number, caPem: string): Promise<void> {
  await apply(admin, `/api/v1/namespaces/${NAMESPACE}/services`, {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: NAME, namespace: NAMESPACE },
    spec: { type: 'ExternalName', externalName: 'localhost', ports: [{ name: 'https', port }] },
  });
  await apply(admin, '/apis/apiregistration.k8s.io/v1/apiservices', {
    apiVersion: 'apiregistration.k8s.io/v1',
    kind: 'APIService',
    metadata: { name: 'v1beta1.metrics.k8s.io' },
    spec: {
      group: 'metrics.k8s.io',
      version: 'v1beta1',
      service: { namespace: NAMESPACE, name: NAME, port },
      caBundle: Buffer.from(caPem).toString('base64'),
      groupPriorityMinimum: 100,
      versionPriority: 100,
    },
  });
  await poll(
    () =>
      admin.request(apiServiceSchema, {
        method: 'GET',
        path: '/apis/apiregistration.k8s.io/v1/apiservices/v1beta1.metrics.k8s.io',
      }),
    (found) => found.status?.conditions?.some((c) => c.type === 'Available' && c.status === 'True') ?? false,
    'the metrics.k8s.io APIService Available',
    60_000,
  );
}
