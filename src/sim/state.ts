import type { PoolUsage } from './capacity.ts';
import type { Caller } from './keys.ts';
import { runningMillis } from './pods/pod.ts';
import { runningWorkers } from './serverless/endpoint.ts';
import type { Simulation } from './simulation.ts';

/** `environmentVars` as a map, the easiest form to assert on. */
type Environment = Record<string, string>;

export interface PodState {
  readonly id: string;
  readonly org: string;
  readonly name: string;
  readonly status: string;
  readonly region: string;
  readonly gpuType: string;
  readonly gpuCount: number;
  readonly isSpot: boolean;
  readonly environment: Environment;
  readonly initializationCommand: string;
  /** The registry credential id its create named; null for none. */
  readonly registryAuthId: string | null;
  readonly runningMillis: number;
}

export interface VmState {
  readonly id: string;
  readonly org: string;
  readonly name: string;
  readonly status: string;
  readonly region: string;
  readonly gpuType: string;
  readonly gpuCount: number;
  readonly isSpot: boolean;
}

export interface TaskState {
  readonly taskId: string;
  readonly status: string;
  readonly deliveryStatus: string;
  readonly deliveryAttempts: number;
}

export interface EndpointState {
  readonly id: string;
  readonly org: string;
  readonly name: string;
  readonly status: string;
  readonly serviceMode: string;
  readonly totalWorkers: number;
  readonly runningWorkers: number;
  readonly environment: Environment;
  readonly tasks: readonly TaskState[];
}

/** Everything the simulated cloud holds, for tests and the chaos suite; API keys are never shown. */
export interface SimState {
  /** Simulated time of the snapshot, epoch ms. */
  readonly now: number;
  /** One entry per configured API key: its organisation and permission, never the key. */
  readonly apiKeys: readonly Caller[];
  readonly pods: readonly PodState[];
  readonly vms: readonly VmState[];
  readonly endpoints: readonly EndpointState[];
  readonly capacity: readonly PoolUsage[];
}

const environment = (vars: ReadonlyArray<{ key: string; value: string }>): Environment =>
  Object.fromEntries(vars.map(({ key, value }) => [key, value]));

export function snapshot(sim: Simulation): SimState {
  const now = sim.ctx.clock.now();
  return {
    now,
    apiKeys: sim.keys.describe(),
    pods: [...sim.pods.store.all()].map((pod) => ({
      id: pod.id,
      org: pod.org,
      name: pod.spec.name,
      status: pod.status,
      region: pod.region,
      gpuType: pod.model.gpuType,
      gpuCount: pod.spec.gpuCount,
      isSpot: pod.spec.isSpot,
      environment: environment(pod.environmentVars),
      initializationCommand: pod.spec.initializationCommand,
      registryAuthId: pod.spec.registryAuthId,
      runningMillis: runningMillis(pod, now),
    })),
    vms: [...sim.vms.store.all()].map((vm) => ({
      id: vm.id,
      org: vm.org,
      name: vm.name,
      status: vm.status,
      region: vm.region,
      gpuType: vm.type.model.gpuType,
      gpuCount: vm.type.gpuCount,
      isSpot: vm.isSpot,
    })),
    endpoints: [...sim.endpoints.store.all()].map((endpoint) => ({
      id: endpoint.id,
      org: endpoint.org,
      name: endpoint.config.name,
      status: endpoint.status,
      serviceMode: endpoint.config.serviceMode,
      totalWorkers: endpoint.totalWorkers,
      runningWorkers: runningWorkers(endpoint),
      environment: environment(endpoint.config.envVars),
      tasks: [...endpoint.board.tasks.values()].map((task) => ({
        taskId: task.taskId,
        status: task.status,
        deliveryStatus: task.deliveryStatus,
        deliveryAttempts: task.deliveryAttempts,
      })),
    })),
    capacity: sim.ctx.capacity.describe(),
  };
}
