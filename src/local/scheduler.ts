// kube-scheduler against a local control plane, from the same Go-module build: it binds Pods to the local
// node (./node.ts). Served on a free loopback port only for its readiness, which is awaited.
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { resolveControlPlaneBinary } from './controlplane/binary.ts';
import { httpsGet } from './controlplane/https-get.ts';
import { freeLoopbackPorts } from './controlplane/ports.ts';
import { type Probe, waitUntilReady } from './controlplane/readiness.ts';
import { ServerProcess } from './controlplane/server-process.ts';
import { readServingCa } from './controlplane/serving-ca.ts';
import type { ControlPlane } from './controlplane.ts';

const READY_TIMEOUT_MS = 90_000;
const PROBE_TIMEOUT_MS = 2000;
/** The name of the self-signed pair kube-scheduler writes into its --cert-dir. */
const PAIR_NAME = 'kube-scheduler';

export interface RunningScheduler {
  readonly logPath: string;
  stop(): Promise<void>;
}

export async function startScheduler(plane: ControlPlane): Promise<RunningScheduler> {
  const logPath = join(plane.dataDir, 'kube-scheduler.log');
  const certDir = join(plane.dataDir, 'kube-scheduler');
  await mkdir(certDir, { recursive: true });
  const [port] = await freeLoopbackPorts(1);
  const server = new ServerProcess({
    binary: await resolveControlPlaneBinary(),
    component: 'scheduler',
    args: [
      `--kubeconfig=${plane.kubeconfigPath}`,
      `--authentication-kubeconfig=${plane.kubeconfigPath}`,
      `--authorization-kubeconfig=${plane.kubeconfigPath}`,
      '--leader-elect=false',
      '--bind-address=127.0.0.1',
      `--secure-port=${port}`,
      `--cert-dir=${certDir}`,
    ],
    logPath,
  });
  try {
    await waitUntilReady(server, schedulerReady(`https://127.0.0.1:${port}`, certDir), READY_TIMEOUT_MS);
  } catch (error) {
    await server.stop();
    throw error;
  }
  return { logPath, stop: () => server.stop() };
}

/** /readyz (open to anyone by the scheduler's defaults) over TLS verified against its own CA. */
function schedulerReady(url: string, certDir: string): Probe {
  return async () => {
    const ca = await readServingCa(certDir, PAIR_NAME);
    if (!ca) return `no serving certificate in ${certDir} yet`;
    const { status, body } = await httpsGet(`${url}/readyz`, { ca, timeoutMs: PROBE_TIMEOUT_MS });
    return status === 200 || `GET /readyz answered ${status}: ${body}`;
  };
}
