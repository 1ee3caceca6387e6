import type { KeyValue, LegacyPersistentVolume, PodStatus } from '../../api/schemas/index.ts';
import type { Reservation } from '../capacity.ts';
import type { GpuModel } from '../catalog.ts';
import type { Stepping } from '../lifecycle.ts';
import type { Stored } from '../store.ts';
import type { PodLog } from './log.ts';

/** A pod create request, v1 or v2, in one shape. */
export interface PodSpec {
  readonly name: string;
  readonly image: string;
  readonly imageRegistry: string;
  readonly imageRegistryUsername: string | null;
  /** The registry credential the image is pulled with (v2 containerRegistryAuthId, v1 credentialId). */
  readonly registryAuthId: string | null;
  readonly imagePublicType: 'PUBLIC' | 'PRIVATE';
  readonly resourceType: 'GPU' | 'CPU';
  readonly gpuType: string;
  readonly gpuCount: number;
  readonly isSpot: boolean;
  readonly maxPrice: number | undefined;
  /** Acceptable regions, in order of preference; empty means any. */
  readonly regions: readonly string[];
  readonly shmInGb: number | undefined;
  readonly minSingleCardRamInGb: number | undefined;
  readonly minSingleCardVramInGb: number | undefined;
  readonly minSingleCardVcpu: number | undefined;
  readonly containerVolumeInGb: number | undefined;
  readonly initializationCommand: string;
  readonly environmentVars: readonly KeyValue[];
  readonly expose: ReadonlyArray<{ port: number; protocol: string }>;
  readonly volumes: readonly LegacyPersistentVolume[];
  readonly callbackUrl: string | null;
}

/** What the pod was asked to become by its last command. */
export type DesiredState = 'RUNNING' | 'PAUSED' | 'TERMINATED';

export interface PodRecord extends Stored<PodStatus>, Stepping {
  readonly orgId: string;
  readonly applicantId: string;
  readonly spec: PodSpec;
  readonly model: GpuModel;
  readonly region: string;
  readonly containerVolumeInGb: number;
  /** USD per GPU-hour, fixed at creation. */
  readonly pricePerGpuHour: number;
  readonly shmInGb: number;
  readonly internalIp: string;
  /** Includes POD_ID, which the service adds. */
  readonly environmentVars: readonly KeyValue[];
  readonly log: PodLog;
  readonly createdAt: number;
  updatedAt: number;
  desiredState: DesiredState;
  /** GPUs held; none while paused, terminated or failed (and never for CPU pods). */
  reservation: Reservation | undefined;
  /** Billing uptime accrued by past RUNNING periods. */
  runningMillis: number;
  /** Start of the current RUNNING period. */
  runningSince: number | undefined;
  /** Past RUNNING periods, `[from, to)`, oldest first: metrics have samples only inside them. */
  readonly runs: RunPeriod[];
  /** GPU utilisation set by the simulator's controls, in the order set (so in time order). */
  readonly gpuUtilization: GpuUtilizationSetting[];
}

export interface RunPeriod {
  readonly from: number;
  readonly to: number;
}

/** From `from` on, `percent` for GPU `gpuIndex`, or for every GPU when it is undefined. */
export interface GpuUtilizationSetting {
  readonly from: number;
  readonly percent: number;
  readonly gpuIndex: number | undefined;
}

/** Billing uptime up to `now`: only time spent RUNNING counts. */
export function runningMillis(pod: PodRecord, now: number): number {
  return pod.runningMillis + (pod.runningSince === undefined ? 0 : now - pod.runningSince);
}
