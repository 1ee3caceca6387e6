import {
  DEFAULT_METRIC_STEP,
  DEFAULT_METRIC_WINDOW_MS,
  type MetricName,
  type MetricSeries,
  type MetricStep,
  type MetricsQuery,
  type StorageUsage,
} from '../../api/schemas/index.ts';
import { CPU_MODEL } from '../catalog.ts';
import { hashUnit } from '../random.ts';
import type { PodRecord } from './pod.ts';

const GIB = 1024 ** 3;
const STEP_MS: Readonly<Record<MetricStep, number>> = {
  '30s': 30_000,
  '5m': 300_000,
  '15m': 900_000,
  '1h': 3_600_000,
  '4h': 14_400_000,
  '1d': 86_400_000,
};

/**
 * The window a metrics query covers: the last hour without start or end, one hour from the end
 * given, or up to the end given. The schema has already refused windows longer than the step allows.
 */
export function metricWindow(
  query: MetricsQuery,
  now: number,
): { start: number; end: number; stepMs: number } {
  const stepMs = STEP_MS[query.step ?? DEFAULT_METRIC_STEP];
  const end = query.end ?? (query.start === undefined ? now : query.start + DEFAULT_METRIC_WINDOW_MS);
  const start = query.start ?? end - DEFAULT_METRIC_WINDOW_MS;
  return { start, end, stepMs };
}

/**
 * Synthetic but stable series: one point per step while the pod was RUNNING (none while it was
 * initialising, paused, degraded or gone: an idle detector must see no samples then, not low ones),
 * each value a function of the pod, the series and the instant, so reading the same window twice
 * gives the same answer. GPU utilisation set through the simulator's controls overrides the value
 * from the instant it was set.
 */
export function podSeries(
  pod: PodRecord,
  name: MetricName,
  query: MetricsQuery,
  now: number,
): MetricSeries[] {
  const { start, end, stepMs } = metricWindow(query, now);
  const stamps = runningStamps(pod, start, Math.min(end, now), stepMs);
  const gpus = pod.model === CPU_MODEL ? 0 : pod.spec.gpuCount;
  const series = (
    labels: Record<string, string>,
    value: (t: number) => number,
    total?: number,
  ): MetricSeries => ({
    labels: { pod_id: pod.id, ...labels },
    data_points: stamps.map((timestamp) => ({ timestamp, value: value(timestamp) })),
    ...(total === undefined ? {} : { latest_total: total }),
  });
  const noise = (t: number, index = 0) => hashUnit(pod.id, name, index, t);
  const perGpu = (make: (index: number) => MetricSeries) =>
    Array.from({ length: gpus }, (_, index) => make(index));
  switch (name) {
    case 'cpu_usage':
      return [series({}, (t) => round(0.2 + 0.6 * noise(t), 4))];
    case 'memory_usage': {
      const total = pod.model.ramPerGpuInGb * pod.spec.gpuCount * GIB;
      return [series({}, (t) => Math.round(total * (0.3 + 0.5 * noise(t))), total)];
    }
    case 'gpu_utilization':
      return perGpu((index) =>
        series(
          { gpu_show_index: String(index) },
          (t) => utilizationSetAt(pod, index, t) ?? round(40 + 60 * noise(t, index), 2),
        ),
      );
    case 'gpu_memory': {
      const total = pod.model.gpuMemoryInGb * GIB;
      return perGpu((index) =>
        series(
          { gpu_show_index: String(index) },
          (t) => Math.round(total * (0.2 + 0.7 * noise(t, index))),
          total,
        ),
      );
    }
  }
}

/** Step-aligned instants in `[start, end]` at which the pod was RUNNING, in order. */
function runningStamps(pod: PodRecord, start: number, end: number, stepMs: number): number[] {
  const stamps: number[] = [];
  const take = (from: number, over: (t: number) => boolean) => {
    for (let t = Math.ceil(Math.max(start, from) / stepMs) * stepMs; t <= end && !over(t); t += stepMs)
      stamps.push(t);
  };
  // A past period ends the instant the pod stopped running, so that instant has no sample.
  for (const run of pod.runs) take(run.from, (t) => t >= run.to);
  if (pod.runningSince !== undefined) take(pod.runningSince, () => false);
  return stamps;
}

/** The latest utilisation set for GPU `index` at or before `t`, if any was. */
function utilizationSetAt(pod: PodRecord, index: number, t: number): number | undefined {
  for (let i = pod.gpuUtilization.length - 1; i >= 0; i--) {
    const setting = pod.gpuUtilization[i];
    if (setting !== undefined && setting.from <= t && (setting.gpuIndex ?? index) === index)
      return setting.percent;
  }
  return undefined;
}

export function podStorage(pod: PodRecord, now: number): StorageUsage {
  const total = pod.containerVolumeInGb * GIB;
  const ratio = round(0.1 + 0.3 * hashUnit(pod.id, 'storage'), 4);
  return {
    pod_id: pod.id,
    ephemeral_storage: {
      used_bytes: Math.round(total * ratio),
      total_bytes: total,
      usage_ratio: ratio,
      last_updated: now,
    },
  };
}

function round(value: number, decimals: number): number {
  const factor = 10 ** decimals;
  return Math.round(value * factor) / factor;
}
