import type { Endpoint } from '../../api/schemas/serverless.ts';

/**
 * The GPUs an endpoint holds, or may hold at any moment: its workers (those it asked for, or more running)
 * from its create on — the cloud answers a create or a start INITIALIZING with no worker running yet, and
 * a stopping endpoint still holds them — and none once STOPPED.
 */
export function endpointHeldGpus(
  endpoint: Pick<Endpoint, 'status' | 'totalWorkers' | 'runningWorkers' | 'resources'>,
): number {
  if (endpoint.status === 'STOPPED') return 0;
  return Math.max(endpoint.totalWorkers, endpoint.runningWorkers) * gpusPerWorker(endpoint.resources);
}

/** Each worker of an endpoint holds the GPUs of its largest resource: the cloud places it on any of them. */
export function gpusPerWorker(resources: ReadonlyArray<{ gpuCount: number }>): number {
  return Math.max(0, ...resources.map((resource) => resource.gpuCount));
}
