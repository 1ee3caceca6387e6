// Create/delete churn: does the operator give back what it kept for resources that are gone? N cycles
// (a GpuPod created, Ready, deleted, gone) in waves beside a fixed set of live ones; before and after, the
// operator's per-resource memory (its `gpucloud_remembered_resources` gauge, per memory) and its RSS.
import { liveCloudResources } from './cloud.ts';
import { gpuPod, names } from './manifests.ts';
import type { OperatorRun } from './operator.ts';
import { forEachConcurrently, sleep, until } from './parallel.ts';
import { startWithProbe } from './phases/startup.ts';
import { megabytes, usageOf } from './process-stats.ts';
import { createResource, deleteResource, ensureNamespace, type Session } from './session.ts';
import { RESOURCES, SIM_SETTINGS } from './stack.ts';
import { round } from './stats.ts';
import { ResourceWatch } from './watch.ts';

/** Cycles in one wave: created together, deleted together. */
const WAVE = 1000;
/** GpuPods that stay through the churn (besides the start-up probe): what the memory must come back to. */
const LIVE = 50;
/** RSS samples, a second apart, whose median stands for "the RSS now". */
const RSS_SAMPLES = 7;

export interface ChurnResult {
  cycles: number;
  /** Resources alive through the churn: the count each memory must be back to (or below). */
  live: number;
  seconds: number;
  cyclesPerSecond: number;
  /** Per memory, resources it holds something for: after one warm-up wave, and after the churn. */
  rememberedBefore: Record<string, number>;
  rememberedAfter: Record<string, number>;
  /** Median RSS after the warm-up wave and after the churn, and the growth in percent. */
  rssBeforeMb: number;
  rssAfterMb: number;
  rssGrowthPercent: number;
  /** RSS after each wave of the churn: a climb that levels off is caches filling, one that goes on a leak. */
  rssByWaveMb: number[];
}

async function medianRssMb(pid: number): Promise<number> {
  const samples: number[] = [];
  for (let i = 0; i < RSS_SAMPLES; i++) {
    samples.push(usageOf(pid)?.rssBytes ?? 0);
    await sleep(1000);
  }
  samples.sort((a, b) => a - b);
  return megabytes(samples[Math.floor(samples.length / 2)] ?? 0);
}

/**
 * What each memory holds once it has let go of the gone resources (no memory above the live count), or
 * after the cloud's retention and three poll intervals if one never does: the cloud lists a deleted object
 * for its retention, and the cache entry goes with the first poll that no longer lists it. The result, not
 * a wait that throws, says whether it came back.
 */
async function settled(
  operator: OperatorRun,
  live: number,
  session: Session,
): Promise<Record<string, number>> {
  const deadline = Date.now() + SIM_SETTINGS.retentionMs + 3 * session.options.pollInterval * 1000;
  for (;;) {
    const { remembered } = await operator.metrics();
    if (Object.values(remembered).every((count) => count <= live) || Date.now() > deadline) return remembered;
    await sleep(500);
  }
}

export async function runChurn(session: Session, cycles: number): Promise<ChurnResult> {
  const { stack, options, log } = session;
  const namespace = 'bench-churn';
  await ensureNamespace(stack.kube, namespace);
  const watch = new ResourceWatch(stack.kube, RESOURCES.gpuPod, namespace, log);
  await watch.start();
  const { operator } = await startWithProbe(session, { namespace, callbacks: true }, watch);
  try {
    const live = names('live', LIVE).map(gpuPod);
    await forEachConcurrently(live, options.concurrency, async (manifest) => {
      await createResource(stack.kube, namespace, manifest);
    });
    await until(() => live.every((m) => watch.readyAt.has(m.name)), 'the live pods Ready', 60_000);
    const alive = LIVE + 1;
    let wave = 0;
    const churnWave = async (size: number) => {
      const batch = names(`churn-${wave++}`, size).map(gpuPod);
      await forEachConcurrently(batch, options.concurrency, async (manifest) => {
        await createResource(stack.kube, namespace, manifest);
      });
      await until(
        () => batch.every((m) => watch.readyAt.has(m.name)),
        `wave ${wave}: ${size} Ready`,
        60_000 + 50 * size,
      );
      await forEachConcurrently(batch, options.concurrency, (manifest) =>
        deleteResource(stack.kube, manifest.resource, namespace, manifest.name),
      );
      await until(
        () => batch.every((m) => watch.goneAt.has(m.name)),
        `wave ${wave}: ${size} gone`,
        60_000 + 50 * size,
      );
      const batchNames = new Set(batch.map((m) => m.name));
      await until(
        () => liveCloudResources(session, batchNames) === 0,
        `wave ${wave}: cloud pods deleted`,
        60_000,
      );
    };
    log.info({ wave: WAVE }, 'churn: warm-up wave');
    await churnWave(WAVE);
    const rememberedBefore = await settled(operator, alive, session);
    const rssBeforeMb = await medianRssMb(operator.pid);
    const began = Date.now();
    const rssByWaveMb: number[] = [];
    for (let done = 0; done < cycles; done += WAVE) {
      log.info({ done, cycles }, 'churn');
      await churnWave(Math.min(WAVE, cycles - done));
      rssByWaveMb.push(megabytes(usageOf(operator.pid)?.rssBytes ?? 0));
    }
    const ms = Date.now() - began;
    const rememberedAfter = await settled(operator, alive, session);
    const rssAfterMb = await medianRssMb(operator.pid);
    return {
      cycles,
      live: alive,
      seconds: round(ms / 1000, 1),
      cyclesPerSecond: round((cycles * 1000) / ms),
      rememberedBefore,
      rememberedAfter,
      rssBeforeMb,
      rssAfterMb,
      rssGrowthPercent: round(((rssAfterMb - rssBeforeMb) / rssBeforeMb) * 100, 1),
      rssByWaveMb,
    };
  } finally {
    await operator.stop();
    await watch.stop();
  }
}
