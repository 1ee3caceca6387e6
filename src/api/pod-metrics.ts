import type { GpuCloudClient } from './client.ts';
import type { MetricResponse, MetricStep, StorageUsage } from './schemas/metrics.ts';

/** The series a pod's metrics are read in, one call each. */
export const POD_METRICS = ['cpu', 'gpu', 'memory', 'gpuMemory'] as const;
export type PodMetricName = (typeof POD_METRICS)[number];

export interface MetricsWindow {
  start: number;
  end: number;
  step: MetricStep;
}

/** What one read of a pod's metrics gives: each series asked for over the window, and the storage used. */
export interface PodMetrics {
  series: MetricResponse[];
  storage: StorageUsage;
}

/** Cloud calls one `readPodMetrics` of `names` sends. */
export function metricsCalls(names: readonly PodMetricName[]): number {
  return names.length + 1;
}

/** Reads `names` (every series by default) and the storage of one pod: `metricsCalls(names)` calls. */
export async function readPodMetrics(
  client: Pick<GpuCloudClient, 'metrics'>,
  id: string,
  window: MetricsWindow,
  names: readonly PodMetricName[] = POD_METRICS,
): Promise<PodMetrics> {
  const series: MetricResponse[] = [];
  for (const name of names) series.push(await client.metrics[name](id, window));
  return { series, storage: await client.metrics.storage(id) };
}
