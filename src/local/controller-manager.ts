// kube-controller-manager with only the controllers asked for (its HPA controller unless told), from the
// same Go-module build as the control plane: for the tests that need one, and for the local node.
import { join } from 'node:path';
import { resolveControlPlaneBinary } from './controlplane/binary.ts';
import { ServerProcess } from './controlplane/server-process.ts';
import type { ControlPlane } from './controlplane.ts';

export interface RunningControllerManager {
  readonly logPath: string;
  stop(): Promise<void>;
}

export interface ControllerManagerOptions {
  /** `--root-ca-file`: the CA the root-ca-certificate-publisher puts in every namespace's kube-root-ca.crt. */
  rootCaFile?: string;
}

export async function startControllerManager(
  plane: ControlPlane,
  controllers: readonly string[] = ['horizontal-pod-autoscaler-controller'],
  options: ControllerManagerOptions = {},
): Promise<RunningControllerManager> {
  const logPath = join(plane.dataDir, 'kube-controller-manager.log');
  const server = new ServerProcess({
    binary: await resolveControlPlaneBinary(),
    component: 'controller-manager',
    args: [
      `--kubeconfig=${plane.kubeconfigPath}`,
      `--controllers=${controllers.join(',')}`,
      '--leader-elect=false',
      // No serving: nothing scrapes it, and it needs no delegated authentication then.
      '--secure-port=0',
      '--horizontal-pod-autoscaler-sync-period=1s',
      ...(options.rootCaFile ? [`--root-ca-file=${options.rootCaFile}`] : []),
    ],
    logPath,
  });
  return { logPath, stop: () => server.stop() };
}
