import { z } from 'zod';
import type { GpuCloudClient } from '../../api/client.ts';
import type { MetricResponse, MetricSeries } from '../../api/schemas/metrics.ts';
import type { Pod, PodListItem } from '../../api/schemas/pods.ts';
import type { GpuPodStatus } from './schema.ts';

/** A listed pod, completed by a get when the list's fields are not enough. */
export type PodView = PodListItem & Partial<Pod>;

/** runtime + cpu + gpu + memory + gpu memory + storage. */
export const DETAIL_CALLS = 6;
export const DETAIL_FIELDS = ['runningSeconds', 'estimatedCost', 'metrics'] as const;

/** The latest five minutes at the finest step: enough for a latest sample, cheap for the service. */
const WINDOW_MS = 5 * 60 * 1000;

type Details = Pick<GpuPodStatus, (typeof DETAIL_FIELDS)[number]>;

/** Runtime, estimated cost and the latest metrics of a running pod. */
export async function fetchPodDetails(client: GpuCloudClient, pod: PodView, end: number): Promise<Details> {
  const window = { start: end - WINDOW_MS, end, step: '30s' as const };
  const [runtime, cpu, gpu, memory, gpuMemory, storage] = await Promise.all([
    client.pods.runtime(pod.id),
    client.metrics.cpu(pod.id, window),
    client.metrics.gpu(pod.id, window),
    client.metrics.memory(pod.id, window),
    client.metrics.gpuMemory(pod.id, window),
    client.metrics.storage(pod.id),
  ]);
  const memorySeries = memory.series[0];
  return {
    runningSeconds: runtime.runningSeconds,
    estimatedCost: estimateCost(pod, runtime.runningSeconds),
    metrics: {
      sampledAt: new Date(latestTimestamp([cpu, gpu, memory, gpuMemory]) ?? end).toISOString(),
      cpuUsage: latestValue(cpu.series[0]),
      memoryUsedBytes: whole(latestValue(memorySeries)),
      memoryTotalBytes: whole(memorySeries?.latest_total),
      gpus: perGpu(gpu, gpuMemory),
      storageUsedBytes: storage.ephemeral_storage.used_bytes,
      storageTotalBytes: storage.ephemeral_storage.total_bytes,
    },
  };
}

const keptPrices = z.object({
  prices: z.looseObject({ singleCard: z.string(), containerVolume: z.string().optional() }),
});

/**
 * The pod with its prices, which the cost is estimated from: a get's view has them; the list's has none,
 * and then the status, written from a get or the create's answer, keeps them.
 */
export function withPrices(pod: PodView, status: Readonly<Record<string, unknown>> | undefined): PodView {
  if (pod.singleCardPrice !== undefined) return pod;
  const prices = keptPrices.safeParse(status).data?.prices;
  if (!prices) return pod;
  return { ...pod, singleCardPrice: prices.singleCard, containerVolumePrice: prices.containerVolume };
}

/**
 * Running hours times the hourly price of the GPUs and the container volume. Assumes the cloud quotes
 * `singleCardPrice` per card-hour and `containerVolumePrice` per GB-hour (as its GPU search does);
 * persistent volumes are billed apart from the pod and left out.
 */
export function estimateCost(pod: PodView, runningSeconds: number): string | undefined {
  if (pod.singleCardPrice === undefined) return undefined;
  const gpus = Number(pod.singleCardPrice) * pod.gpuCount;
  const volume = Number(pod.containerVolumePrice ?? 0) * pod.containerVolumeInGb;
  const cost = (runningSeconds / 3600) * (gpus + volume);
  return Number.isFinite(cost) ? cost.toFixed(4) : undefined;
}

type GpuSample = NonNullable<NonNullable<Details['metrics']>['gpus']>[number];

function perGpu(utilization: MetricResponse, memory: MetricResponse): GpuSample[] {
  const byIndex = new Map<number, GpuSample>();
  const entry = (series: MetricSeries) => {
    const index = Number(series.labels.gpu_show_index ?? 0);
    const found = byIndex.get(index) ?? { index };
    byIndex.set(index, found);
    return found;
  };
  for (const series of utilization.series) entry(series).utilizationPercent = latestValue(series);
  for (const series of memory.series) {
    const gpu = entry(series);
    gpu.memoryUsedBytes = whole(latestValue(series));
    gpu.memoryTotalBytes = whole(series.latest_total);
  }
  return [...byIndex.values()].sort((a, b) => a.index - b.index);
}

function latestValue(series: MetricSeries | undefined): number | undefined {
  return series?.data_points.at(-1)?.value;
}

function latestTimestamp(responses: readonly MetricResponse[]): number | undefined {
  const stamps = responses.flatMap((r) => r.series.map((s) => s.data_points.at(-1)?.timestamp ?? 0));
  const latest = Math.max(0, ...stamps);
  return latest > 0 ? latest : undefined;
}

/** The CRD stores byte counts as integers. */
function whole(value: number | undefined): number | undefined {
  return value === undefined ? undefined : Math.round(value);
}
