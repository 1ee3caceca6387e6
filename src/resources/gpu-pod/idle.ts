import { z } from 'zod';
import type { GpuCloudClient } from '../../api/client.ts';
import type { MetricResponse } from '../../api/schemas/metrics.ts';
import type { IdleRule } from '../../managed/core/external-kind.ts';
import type { PodView } from './details.ts';
import type { GpuPodSpec } from './schema.ts';

const STEP_MS = 30_000;
/**
 * Samples may be this late at either end of the window, or this far apart inside it, and still cover it:
 * two steps, as a metrics pipeline lags a sample or drops one. More than that is "samples missing".
 */
const SLACK_MS = 2 * STEP_MS;

const reportedGpus = z.object({
  status: z.object({
    metrics: z.object({ gpus: z.array(z.object({ utilizationPercent: z.number().optional() })) }),
  }),
});

/** The busiest GPU's utilisation as the pod's status last reported it; undefined when it has none. */
export function busiestGpu(mr: unknown): number | undefined {
  const parsed = reportedGpus.safeParse(mr);
  if (!parsed.success) return undefined;
  const values = parsed.data.status.metrics.gpus.flatMap((gpu) => gpu.utilizationPercent ?? []);
  return values.length === 0 ? undefined : Math.max(...values);
}

/** One read: the GPU utilisation series over the window. */
export const IDLE_CHECK_CALLS = 1;

export function idleRuleOf(spec: GpuPodSpec): IdleRule | undefined {
  const rule = spec.idleStop;
  return rule && { belowPercent: rule.gpuUtilizationBelowPercent, forMinutes: rule.forMinutes };
}

/** Why the pod is idle over the rule's window ending `now`, or undefined when it is busy or cannot be told. */
export async function checkIdle(
  client: GpuCloudClient,
  pod: PodView,
  rule: IdleRule,
  now: number,
): Promise<string | undefined> {
  const start = now - rule.forMinutes * 60_000;
  // A pod younger than the window cannot have been idle for all of it.
  if (pod.createdAt > start) return undefined;
  const response = await client.metrics.gpu(pod.id, { start, end: now, step: '30s' });
  return idleVerdict(response, rule, start, now);
}

/**
 * Idle only when every GPU's series covers the whole window with samples of the pod running (the metrics
 * API has none while it is paused or starting) and every sample is below the threshold.
 */
export function idleVerdict(
  response: MetricResponse,
  rule: IdleRule,
  start: number,
  end: number,
): string | undefined {
  if (response.series.length === 0) return undefined;
  let highest = 0;
  for (const series of response.series) {
    const stamps = series.data_points.map((point) => point.timestamp).sort((a, b) => a - b);
    const first = stamps[0];
    const last = stamps.at(-1);
    if (first === undefined || last === undefined) return undefined;
    if (first - start > SLACK_MS || end - last > SLACK_MS) return undefined;
    for (let i = 1; i < stamps.length; i++) {
      if ((stamps[i] ?? 0) - (stamps[i - 1] ?? 0) > SLACK_MS) return undefined;
    }
    for (const point of series.data_points) {
      if (point.value >= rule.belowPercent) return undefined;
      highest = Math.max(highest, point.value);
    }
  }
  return `every GPU stayed below ${rule.belowPercent}% utilisation for ${rule.forMinutes} minutes (at most ${highest}%)`;
}
