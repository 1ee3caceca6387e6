// kube-controller-manager from the same Go-module build as the control plane: the controllers a real
// cluster runs beside its apiserver, for `npm run local` (all of them) and the tests that need some.
import { mkdir } from 'node:fs/promises';
import { resolveControlPlaneBinary } from './controlplane/binary.ts';
import { controlPlaneLayout } from './controlplane/layout.ts';
import { freeLoopbackPorts } from './controlplane/ports.ts';
import { controllersStarted } from './controlplane/probes.ts';
import { waitUntilReady } from './controlplane/readiness.ts';
import { ServerProcess } from './controlplane/server-process.ts';
import type { ControlPlane } from './controlplane.ts';

/**
 * What a cluster's tenants and the docs rely on. Not the workload controllers (Deployments, Jobs, ...):
 * with no nodes and no scheduler their pods would only wait.
 */
export const CLUSTER_CONTROLLERS = [
  // `view`, `edit` and `admin` gather the ClusterRoles labelled aggregate-to-*: the tenant API's grants.
  'clusterrole-aggregation-controller',
  // A deleted namespace is emptied and goes, rather than staying Terminating.
  'namespace-controller',
  // An object goes with its owner (ownerReferences).
  'garbage-collector-controller',
  // An HPA scales a ServerlessEndpoint through its scale subresource.
  'horizontal-pod-autoscaler-controller',
  // A ResourceQuota's usage: without it, admission refuses every create its quota covers.
  'resourcequota-controller',
  // Each namespace gets its `default` ServiceAccount.
  'serviceaccount-controller',
] as const;

const DEFAULT_READY_TIMEOUT_MS = 90_000;

export interface ControllerManagerOptions {
  /** Default: CLUSTER_CONTROLLERS. */
  readonly controllers?: readonly string[];
  /** Appended to the command line, e.g. `--horizontal-pod-autoscaler-sync-period=1s`. */
  readonly flags?: readonly string[];
  /** Bound on the start, until every controller runs. Default 90 s: the machine may be busy. */
  readonly readyTimeoutMs?: number;
}

export interface RunningControllerManager {
  readonly controllers: readonly string[];
  readonly logPath: string;
  /** Idempotent. */
  stop(): Promise<void>;
}

/**
 * Starts kube-controller-manager as the plane's admin and resolves once each of `controllers` has
 * started (its check is listed on /healthz); if it exits or the time runs out first, it is stopped and
 * the error carries the end of its log.
 */
export async function startControllerManager(
  plane: ControlPlane,
  options: ControllerManagerOptions = {},
): Promise<RunningControllerManager> {
  const controllers = options.controllers ?? CLUSTER_CONTROLLERS;
  const layout = controlPlaneLayout(plane.dataDir);
  await mkdir(layout.controllerManagerCertDir, { recursive: true, mode: 0o700 });
  const [port = 0] = await freeLoopbackPorts(1);
  const server = new ServerProcess({
    binary: await resolveControlPlaneBinary(),
    component: 'controller-manager',
    args: [
      `--kubeconfig=${plane.kubeconfigPath}`,
      `--controllers=${controllers.join(',')}`,
      '--leader-elect=false',
      // Served on loopback for the readiness check only: /healthz is open to anyone (its default
      // --authorization-always-allow-paths), so it needs no delegated authentication.
      '--bind-address=127.0.0.1',
      `--secure-port=${port}`,
      `--cert-dir=${layout.controllerManagerCertDir}`,
      ...(options.flags ?? []),
    ],
    logPath: layout.controllerManagerLog,
  });
  try {
    await waitUntilReady(
      server,
      controllersStarted(`https://127.0.0.1:${port}`, layout.controllerManagerCertDir, controllers),
      options.readyTimeoutMs ?? DEFAULT_READY_TIMEOUT_MS,
    );
  } catch (error) {
    await server.stop();
    throw error;
  }
  return { controllers, logPath: layout.controllerManagerLog, stop: () => server.stop() };
}
