// From applying N resources to all of them Ready: the operator's throughput, and how long each resource
// waited for its cloud create and for Ready.
import type { Manifest } from '../manifests.ts';
import type { OperatorRun } from '../operator.ts';
import { until } from '../parallel.ts';
import { cpuBetween, markCpu, megabytes, RssSampler } from '../process-stats.ts';
import { apiserverWrites } from '../prometheus.ts';
import type { Session } from '../session.ts';
import { type Distribution, delta, distribution, round } from '../stats.ts';
import type { ResourceWatch } from '../watch.ts';
import { type Applied, applyBurst, applyPaced } from './apply.ts';

export interface ConvergenceResult {
  count: number;
  /** First create sent to last resource Ready. */
  seconds: number;
  resourcesPerSecond: number;
  /** How long the benchmark's creates alone took. */
  applySeconds: number;
  createToReadyMs: Distribution;
  /**
   * First create sent to each resource Ready: when each finished within the run. Unlike create → Ready,
   * it does not leave out the time the benchmark itself took to create the resource.
   */
  burstToReadyMs: Distribution;
  /** To the cloud create (the simulator's `createdAt`); GpuPods only. */
  createToCloudMs: Distribution | undefined;
  peakRssMb: number;
  cpu: ReturnType<typeof cpuBetween>;
  /** Time the operator's requests waited for its own client-side rate limiter. */
  rateLimitedSeconds: number;
  reconcileErrors: number;
  /** Apiserver writes (the benchmark's creates included) and cloud calls, per resource. */
  apiserverWritesPerResource: Record<string, number>;
  cloudCallsPerResource: Record<string, number>;
}

export interface Pacing {
  perSecond: number;
}

/**
 * Applies `manifests` (all at once with the session's concurrency, or paced) and waits until every one
 * is Ready in `watches` (one per kind).
 */
export async function converge(
  session: Session,
  operator: OperatorRun,
  namespace: string,
  manifests: readonly Manifest[],
  watches: readonly ResourceWatch[],
  pacing?: Pacing,
): Promise<ConvergenceResult> {
  const before = await operator.metrics();
  const writes0 = await apiserverWrites(session.stack.plane.kubeConfig);
  const calls0 = session.stack.sim.calls.snapshot().byOperation;
  const cpuFrom = markCpu(operator.pid, session.controlPlanePids);
  const rss = new RssSampler(operator.pid);
  let applied: Applied;
  let peakRss = 0;
  try {
    applied = pacing
      ? await applyPaced(session, namespace, manifests, pacing.perSecond)
      : await applyBurst(session, namespace, manifests);
    await until(
      () => readyCount(manifests, watches) === manifests.length,
      `${manifests.length} resources Ready`,
      60_000 + 50 * manifests.length,
      () => `(${readyCount(manifests, watches)} Ready)`,
      100,
    );
  } finally {
    peakRss = rss.stop();
  }
  const cpu = cpuBetween(cpuFrom, markCpu(operator.pid, session.controlPlanePids));
  const after = await operator.metrics();
  const writes = delta(writes0, await apiserverWrites(session.stack.plane.kubeConfig));
  const calls = delta(calls0, session.stack.sim.calls.snapshot().byOperation);
  const perResource = (counts: Record<string, number>) =>
    Object.fromEntries(Object.entries(counts).map(([key, n]) => [key, round(n / manifests.length, 2)]));
  const readyAt = (name: string) => watches.find((watch) => watch.readyAt.has(name))?.readyAt.get(name) ?? 0;
  const lastReady = Math.max(...manifests.map((manifest) => readyAt(manifest.name)));
  const ms = lastReady - applied.began;
  const cloudCreated = await podCreateTimes(session);
  return {
    count: manifests.length,
    seconds: round(ms / 1000, 2),
    resourcesPerSecond: round((manifests.length * 1000) / ms),
    applySeconds: round((applied.ended - applied.began) / 1000, 2),
    createToReadyMs: distribution(sinceCreated(applied, readyAt)),
    burstToReadyMs: distribution(manifests.map((manifest) => readyAt(manifest.name) - applied.began)),
    createToCloudMs: cloudLatency(applied, cloudCreated),
    peakRssMb: megabytes(peakRss),
    cpu,
    rateLimitedSeconds: round(after.rateLimitedSeconds - before.rateLimitedSeconds, 2),
    reconcileErrors: after.reconcileErrors - before.reconcileErrors,
    apiserverWritesPerResource: perResource(writes),
    cloudCallsPerResource: perResource(calls),
  };
}

function readyCount(manifests: readonly Manifest[], watches: readonly ResourceWatch[]): number {
  return manifests.filter((manifest) => watches.some((watch) => watch.readyAt.has(manifest.name))).length;
}

function sinceCreated(applied: Applied, at: (name: string) => number | undefined): number[] {
  const latencies: number[] = [];
  for (const [name, created] of applied.createdAt) {
    const then = at(name);
    if (then !== undefined) latencies.push(then - created);
  }
  return latencies;
}

function cloudLatency(applied: Applied, cloudCreated: Map<string, number>): Distribution | undefined {
  const latencies = sinceCreated(applied, (name) => cloudCreated.get(name));
  return latencies.length > 0 ? distribution(latencies) : undefined;
}

/** When the cloud created each pod, by name (one list call, made by the benchmark). */
async function podCreateTimes(session: Session): Promise<Map<string, number>> {
  const pods = await session.stack.cloud.pods.list();
  return new Map(pods.map((pod) => [pod.name, pod.createdAt]));
}
