// kube-controller-manager with only the controllers a test needs (its HPA controller unless told), from the
// same Go-module build as the control plane, started for the tests that need them and stopped with them.
import { join } from 'node:path';
import { resolveControlPlaneBinary } from '../../src/local/controlplane/binary.ts';
import { ServerProcess } from '../../src/local/controlplane/server-process.ts';
import type { ControlPlane } from '../../src/local/controlplane.ts';

export interface RunningControllerManager {
  readonly logPath: string;
  stop(): Promise<void>;
}

export async function startControllerManager(
  plane: ControlPlane,
  controllers: readonly string[] = ['horizontal-pod-autoscaler-controller'],
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
    ],
    logPath,
  });
  return { logPath, stop: () => server.stop() };
}
