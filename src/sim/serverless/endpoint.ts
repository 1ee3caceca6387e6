import type {
  EndpointCreateRequest,
  EndpointStatus,
  ServiceMode,
  TaskStatus,
  TaskSubmitRequest,
} from '../../api/schemas/index.ts';
import type { Reservation } from '../capacity.ts';
import type { GpuModel } from '../catalog.ts';
import type { Stepping } from '../lifecycle.ts';
import type { Stored } from '../store.ts';

/** What a worker runs on: one entry of the endpoint's `resources`. */
export interface WorkerResource {
  readonly region: string;
  readonly model: GpuModel;
  readonly gpuCount: number;
}

/** The endpoint's settings: the create request with the service's defaults filled in. */
export interface EndpointConfig {
  readonly name: string;
  readonly imageRegistry: string;
  readonly image: string;
  readonly resources: readonly WorkerResource[];
  readonly minSingleCardVramInGb: number;
  readonly minSingleCardVcpu: number;
  readonly minSingleCardRamInGb: number;
  readonly credentialId: string | null;
  readonly containerVolumeInGb: number;
  readonly initializationCommand: string;
  readonly envVars: NonNullable<EndpointCreateRequest['envVars']>;
  readonly expose: { port: number; protocol: string } | null;
  readonly serviceMode: ServiceMode;
  readonly webhook: string | null;
}

export interface TaskRecord extends Stepping {
  readonly taskId: string;
  readonly request: TaskSubmitRequest;
  status: TaskStatus;
  workerUrl: string | null;
  output: unknown;
  error: string | null;
  deliveryStatus: 'INIT' | 'SUCCESS' | 'FAILED' | 'MAX_RETRIES_EXCEEDED';
  deliveryAttempts: number;
  readonly createdAt: number;
  updatedAt: number;
  deliveredAt: number | null;
}

/** An endpoint's task queue: every task by id (submission order), those waiting, and busy workers. */
export interface TaskBoard {
  readonly tasks: Map<string, TaskRecord>;
  readonly waiting: TaskRecord[];
  readonly counts: Record<TaskStatus, number>;
  busyWorkers: number;
}

export interface EndpointRecord extends Stored<EndpointStatus>, Stepping {
  readonly orgId: string;
  readonly creator: string;
  config: EndpointConfig;
  /** Workers the caller asked for. */
  totalWorkers: number;
  /** GPUs held, one reservation per worker; empty while stopped. */
  workers: Reservation[];
  domain: string | null;
  readonly createdAt: number;
  updatedAt: number;
  /** USD spent by past running periods, and the start of the current one. */
  costAccrued: number;
  costSince: number | undefined;
  readonly board: TaskBoard;
}

/** Workers serving requests: all of them while RUNNING, none otherwise. */
export function runningWorkers(endpoint: EndpointRecord): number {
  return endpoint.status === 'RUNNING' ? endpoint.workers.length : 0;
}
