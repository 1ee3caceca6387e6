// What the virtual node says it holds, from the account's guardrails and the cloud's GPU offers. Pure.
import type { GpuSpec } from '../api/schemas/gpus.ts';

/** The account's limits that shape the node. */
export interface NodeLimits {
  /** `guardrails.maxLiveGpus`: the most GPUs the account may hold at once. */
  readonly maxLiveGpus?: number | undefined;
  /** `guardrails.gpuTypes`: the GPU types the account may place; any when undefined. */
  readonly gpuTypes?: ReadonlySet<string> | undefined;
  /** `virtualNode.maxPods`. */
  readonly maxPods: number;
}

/** The node's capacity (and allocatable: nothing runs on the node but its Pods) and where it places. */
export interface NodeCapacity {
  readonly resources: Readonly<Record<string, string>>;
  /** GPU types it can place, sorted. */
  readonly gpuTypes: readonly string[];
  /** Regions it can place in, sorted. */
  readonly regions: readonly string[];
}

export const GPU_RESOURCE = 'nvidia.com/gpu';

/**
 * GPUs: `maxLiveGpus` when the guardrails set it, else the room the cloud has now (each allowed offer's
 * largest available GPU count, summed); none when no offer is of a type the account allows. CPU, memory
 * and ephemeral storage follow from the GPUs at the most generous allowed offer's per-GPU share, so that
 * a Pod asking for them beside its GPUs fits where a cloud pod could hold them.
 */
export function nodeCapacity(limits: NodeLimits, offers: readonly GpuSpec[]): NodeCapacity {
  const allowed = offers.filter((offer) => limits.gpuTypes?.has(offer.gpuType) ?? true);
  const roomNow = allowed
    .filter((offer) => offer.status === 'AVAILABLE')
    .reduce((sum, offer) => sum + Math.max(0, ...offer.availableGpuCounts), 0);
  const gpus = allowed.length === 0 ? 0 : (limits.maxLiveGpus ?? roomNow);
  const perGpu = (field: 'vcpuPerGpu' | 'ramPerGpuInGb' | 'localDiskPerGpuInGb') =>
    Math.max(0, ...allowed.map((offer) => offer[field]));
  return {
    resources: {
      [GPU_RESOURCE]: String(gpus),
      cpu: String(gpus * perGpu('vcpuPerGpu')),
      memory: `${gpus * perGpu('ramPerGpuInGb')}G`,
      'ephemeral-storage': `${gpus * perGpu('localDiskPerGpuInGb')}G`,
      pods: String(limits.maxPods),
    },
    gpuTypes: [...new Set(allowed.map((offer) => offer.gpuType))].sort(),
    regions: [...new Set(allowed.map((offer) => offer.region))].sort(),
  };
}
