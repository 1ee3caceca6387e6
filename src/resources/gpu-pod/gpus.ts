import type { PodView } from './details.ts';

/** States in which a pod no longer holds its GPUs; every other state counts against the account's limit. */
const RELEASED = new Set(['PAUSED', 'TERMINATED']);

/** The GPUs a pod holds, or may hold at any moment: not paused or terminated, and not a CPU pod. */
export function podHeldGpus(pod: Pick<PodView, 'status' | 'resourceType' | 'gpuCount'>): number {
  return RELEASED.has(pod.status) || pod.resourceType === 'CPU' ? 0 : pod.gpuCount;
}
