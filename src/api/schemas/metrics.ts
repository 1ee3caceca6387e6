import { z } from 'zod';
import { cloudId, epochMsAsNumber, int64AsNumber, int64AsString } from './common.ts';

/* Pod metrics. Names are the spec's own (snake_case); timestamps are JSON integers. */

export const METRIC_STEPS = ['30s', '5m', '15m', '1h', '4h', '1d'] as const;
export type MetricStep = (typeof METRIC_STEPS)[number];

export const DEFAULT_METRIC_STEP: MetricStep = '30s';
/** With neither start nor end the window is the last hour; with one of them, one hour from it. */
export const DEFAULT_METRIC_WINDOW_MS = 60 * 60 * 1000;

const HOUR = 60 * 60 * 1000;
const DAY = 24 * HOUR;
/** Longest window each step may cover. */
export const MAX_METRIC_WINDOW_MS: Readonly<Record<MetricStep, number>> = {
  '30s': 3 * HOUR,
  '5m': 12 * HOUR,
  '15m': 2 * DAY,
  '1h': 7 * DAY,
  '4h': 30 * DAY,
  '1d': 90 * DAY,
};

function hours(ms: number): string {
  return String(Math.round((ms / HOUR) * 100) / 100);
}

export const metricsParams = z.object({ pod_id: cloudId });

const epochMsQuery = int64AsString(z.number().int().min(0, 'must be epoch milliseconds'));

/**
 * Window rules: end after start, and no longer than the step allows. Only a window with both ends
 * can break them, because a one-sided or absent window is one hour, which every step allows.
 */
export const metricsQuery = z
  .object({
    start: epochMsQuery.optional(),
    end: epochMsQuery.optional(),
    step: z.enum(METRIC_STEPS, { error: `step must be one of ${METRIC_STEPS.join(', ')}` }).optional(),
  })
  .superRefine(({ start, end, step = DEFAULT_METRIC_STEP }, ctx) => {
    if (start === undefined || end === undefined) return;
    if (end <= start) {
      ctx.addIssue({ code: 'custom', path: ['end'], message: 'end must be after start' });
      return;
    }
    const max = MAX_METRIC_WINDOW_MS[step];
    if (end - start > max) {
      ctx.addIssue({
        code: 'custom',
        path: ['end'],
        message: `the window from start to end is ${hours(end - start)} hours, longer than the ${hours(max)} hours step ${step} allows: use a larger step or a shorter window`,
      });
    }
  });
export type MetricsQuery = z.output<typeof metricsQuery>;

export const METRIC_NAMES = ['cpu_usage', 'gpu_utilization', 'memory_usage', 'gpu_memory'] as const;
export type MetricName = (typeof METRIC_NAMES)[number];

export const dataPoint = z.object({ timestamp: epochMsAsNumber, value: z.number() });

export const metricSeries = z.object({
  labels: z.record(z.string(), z.string()),
  data_points: z.array(dataPoint),
  /** Bytes; memory series only. */
  latest_total: z.number().optional(),
});
export type MetricSeries = z.output<typeof metricSeries>;

/** A time-series response; each operation answers with its own `metric_name`. */
export function metricResponse<Name extends MetricName>(name: Name) {
  return z.object({ metric_name: z.literal(name), series: z.array(metricSeries) });
}
export type MetricResponse = z.output<ReturnType<typeof metricResponse>>;

export const storageUsage = z.object({
  pod_id: z.string(),
  ephemeral_storage: z.object({
    used_bytes: int64AsNumber(),
    total_bytes: int64AsNumber(),
    usage_ratio: z.number(),
    last_updated: epochMsAsNumber,
  }),
});
export type StorageUsage = z.output<typeof storageUsage>;
