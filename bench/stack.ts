// Everything the benchmark runs against: a real control plane with the CRDs, the simulator in this
// process (so its call counts and fault controls are at hand), and clients for both.
import { GpuCloudClient } from '../src/api/client.ts';
import { KubeClient } from '../src/kube/client.ts';
import type { ResourceType } from '../src/kube/resource-type.ts';
import { type ControlPlane, startControlPlane } from '../src/local/controlplane.ts';
import {
  gpuPodKind,
  gpuVmKind,
  type KindDefinition,
  serverlessEndpointKind,
  serverlessTaskKind,
} from '../src/resources/kinds.ts';
import { type RunningSimulator, startSimulator } from '../src/sim/index.ts';
import { installCrds } from '../test/support/crds.ts';
import { inClusterEnv } from './in-cluster.ts';

export const API_KEY = 'bench-key-3c1d9e7f5a2b';

/**
 * The simulator's settings, kept in the results: instant state transitions, so that what is measured is
 * the operator and the apiserver, and enough GPUs that capacity never refuses a create.
 */
export const SIM_SETTINGS = { transitionMs: 0, retentionMs: 60_000, gpusPerPool: 1_000_000 } as const;

/**
 * The apiserver collects garbage at twice the heap it keeps (GOGC 200, Go's default is 100). On the one core
 * the benchmark gives the control plane, the collector's work is not spread over idle cores as on a
 * control plane's own machine: at 100 it was a quarter to a third of the apiserver's CPU, and how much
 * followed the heap that earlier phases happened to leave (40 collections in one run of the virtual node's
 * phase, 15 to 17 in others), which made the phase's speed vary by half from run to run (docs/performance.md).
 */
export const APISERVER_ENV = { GOGC: '200' } as const;

function resourceOf(kind: Pick<KindDefinition, 'group' | 'version' | 'plural' | 'kind'>): ResourceType {
  return { group: kind.group, version: kind.version, plural: kind.plural, kind: kind.kind, namespaced: true };
}

export const RESOURCES = {
  gpuPod: resourceOf(gpuPodKind),
  gpuVm: resourceOf(gpuVmKind),
  serverlessEndpoint: resourceOf(serverlessEndpointKind),
  serverlessTask: resourceOf(serverlessTaskKind),
} as const;

export interface Stack {
  readonly plane: ControlPlane;
  /** What puts the operator on the in-cluster path, as a ServiceAccount of the plane. */
  readonly inClusterEnv: Readonly<Record<string, string>>;
  readonly sim: RunningSimulator;
  readonly kube: KubeClient;
  /** The benchmark's own view of the cloud (its calls are counted by the simulator too). */
  readonly cloud: GpuCloudClient;
  stop(): Promise<void>;
}

export async function startStack(): Promise<Stack> {
  const plane = await startControlPlane({ apiserverEnv: APISERVER_ENV });
  let sim: RunningSimulator | undefined;
  try {
    await installCrds(plane.kubeConfig);
    sim = await startSimulator({
      apiKeys: [API_KEY],
      transitionMs: SIM_SETTINGS.transitionMs,
      retentionMs: SIM_SETTINGS.retentionMs,
      capacity: { gpusPerPool: SIM_SETTINGS.gpusPerPool },
    });
  } catch (error) {
    await plane.stop();
    throw error;
  }
  const running = sim;
  const serviceAccount = await inClusterEnv(plane);
  const cloud = new GpuCloudClient({
    baseUrl: running.url,
    apiKey: API_KEY,
    rateLimit: { requestsPerSecond: 10_000, burst: 10_000 },
  });
  return {
    plane,
    inClusterEnv: serviceAccount,
    sim: running,
    kube: new KubeClient(plane.connection),
    cloud,
    async stop() {
      await cloud.close();
      await running.stop();
      await plane.stop();
    },
  };
}
