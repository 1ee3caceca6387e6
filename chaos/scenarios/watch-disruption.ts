import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { sleep } from '../../src/lib/delay.ts';
import { kubeConfigVia } from '../../test/support/kube.ts';
import { TcpProxy } from '../../test/support/tcp-proxy.ts';
import { noteConverged } from '../convergence.ts';
import { changeResource, createResource, deleteResource, operations, planChurn } from '../driver.ts';
import type { Tracked } from '../ledger.ts';
import type { Random } from '../random.ts';
import { churnResult, round, type ScenarioResult } from '../report.ts';
import type { RunContext } from '../run-context.ts';
import { Trial } from '../trial.ts';
import { KIND_NAMES, resourceName, specChange, validSpec } from '../workload.ts';

/** The suite's `--resync` (OPERATOR_FLAGS): the bound on converging after a disruption ends. */
const RESYNC_MS = 30_000;
/** Changes made around each connection cut land within this window, cuts at random instants in it. */
const CUT_WINDOW_MS = 2_000;
const CUTS_PER_WINDOW = 3;
const SAMPLE_MS = 500;

/**
 * Scenario 3. The operator reaches the apiserver through a relay the suite controls. Round after round,
 * while resources are created, changed and deleted, the suite either cuts every connection (watches
 * and requests in flight) a few times, or stops and restarts the apiserver (etcd keeps the data); then
 * it waits for everything to converge. No change may be missed: every round must converge, within the
 * resync period of its end.
 */
export async function watchDisruption(run: RunContext): Promise<ScenarioResult> {
  const startedAt = Date.now();
  const profile = run.profile.watch;
  const random = run.random.fork('watch');
  const proxy = await TcpProxy.start(new URL(run.plane.server));
  const kubeconfigPath = join(run.plane.dataDir, 'chaos-proxied.kubeconfig');
  const kubeConfig = kubeConfigVia(run.plane.kubeConfig, proxy.url);
  await writeFile(kubeconfigPath, kubeConfig.exportConfig(), { mode: 0o600 });
  const trial = await Trial.open(run, { label: 'watch', kubeconfigPath });
  const sampling = new AbortController();
  try {
    await trial.startOperators();
    const initial = planChurn(random.fork('plan'), {
      resources: profile.resources,
      spreadMs: 2_000,
      deleteShare: 0,
      changeShare: 0,
      lifetimeMs: [0, 0],
    });
    const stats = await trial.drive(initial);
    await trial.converge();
    const disruptedFrom = Date.now();
    void sampleConvergence(trial, sampling.signal);
    const change = changer(trial, random.fork('changes'), profile.resources);
    const recoveries: Record<'cut' | 'restart', number[]> = { cut: [], restart: [] };
    const unconverged: string[] = [];
    let cuts = 0;
    for (let round = 0; round < profile.disruptions; round += 1) {
      const kind = round % 2 === 0 ? 'cut' : 'restart';
      const changes = Array.from({ length: profile.changesPerDisruption }, () => random.between(0, 1));
      if (kind === 'cut') {
        const cutAt = Array.from({ length: CUTS_PER_WINDOW }, () => random.between(0, CUT_WINDOW_MS));
        await Promise.all([
          ...changes.map((share) => later(share * CUT_WINDOW_MS, change)),
          ...cutAt.map((ms) =>
            later(ms, async () => {
              proxy.cut();
              proxy.resume();
              cuts += 1;
            }),
          ),
        ]);
      } else {
        const downMs = random.between(...profile.apiserverDownMs);
        await run.plane.stopApiserver();
        const during = Promise.all(changes.map((share) => later(share * downMs, change)));
        await sleep(downMs);
        await run.plane.startApiserver();
        await during;
      }
      const recovery = await trial.converge();
      recoveries[kind].push(recovery.ms);
      if (!recovery.converged)
        unconverged.push(...recovery.problems.map((problem) => `round ${round}: ${problem}`));
    }
    const disruptedUntil = Date.now();
    const settled = await trial.settle();
    const latencies = trial.ledger.settlements
      .filter(({ changedAt }) => changedAt >= disruptedFrom && changedAt <= disruptedUntil)
      .map(({ changedAt, convergedAt }) => convergedAt - changedAt);
    const worstRecovery = Math.max(0, ...recoveries.cut, ...recoveries.restart);
    return churnResult({
      scenario: 'watch-disruption',
      startedAt,
      ops: operations(stats) + change.count(),
      kills: cuts + recoveries.restart.length,
      ...settled,
      crashes: trial.crashes,
      apiCalls: trial.sim.calls.snapshot().total,
      figures: {
        cuts,
        apiserverRestarts: recoveries.restart.length,
        changesDuringDisruption: latencies.length,
        worstRecoveryAfterCutS: seconds(Math.max(0, ...recoveries.cut)),
        worstRecoveryAfterRestartS: seconds(Math.max(0, ...recoveries.restart)),
        medianRecoveryAfterRestartS: seconds(median(recoveries.restart)),
        worstChangeToConvergedS: seconds(Math.max(0, ...latencies)),
        medianChangeToConvergedS: seconds(median(latencies)),
        boundS: RESYNC_MS / 1000,
      },
      violations: unconverged.length > 0 ? [`a round never converged: ${unconverged.join('; ')}`] : [],
      missedTargets:
        worstRecovery > RESYNC_MS
          ? [
              `a round took ${seconds(worstRecovery)} s to converge, over the ${RESYNC_MS / 1000} s resync bound`,
            ]
          : [],
    });
  } finally {
    sampling.abort();
    await trial.close();
    await proxy.close();
  }
}

const seconds = (ms: number) => round(ms / 1000);

/** Looks at both sides every half second, noting when each change is carried out; apiserver outages are skipped. */
async function sampleConvergence(trial: Trial, signal: AbortSignal): Promise<void> {
  while (!signal.aborted) {
    try {
      noteConverged(trial.ledger, await trial.observe());
    } catch {
      // The apiserver is down or the connection was cut: the next sample will tell.
    }
    await sleep(SAMPLE_MS, signal);
  }
}

/**
 * A random user action on the trial's resources: a new resource, a spec change or a delete. Two
 * actions never touch one resource at once (a change racing its own delete would find nothing).
 */
function changer(trial: Trial, random: Random, firstIndex: number) {
  let next = firstIndex;
  let count = 0;
  const busy = new Set<Tracked>();
  const act = async (): Promise<void> => {
    const idle = trial.ledger.live().filter((tracked) => !busy.has(tracked));
    const roll = random.next();
    const target = idle.length > 0 ? random.pick(idle) : undefined;
    if (target) busy.add(target);
    try {
      if (!target || roll < 0.2) {
        const kind = random.pick(KIND_NAMES);
        const spec = validSpec(kind, random);
        const life = { kind, name: resourceName(kind, next++), spec, createAt: 0, changes: [] };
        await createResource(trial.cluster, trial.namespace, trial.ledger, life);
      } else if (roll < 0.4) {
        await deleteResource(trial.cluster, trial.namespace, trial.ledger, target);
      } else {
        const patch = specChange(target.kind, target.name, target.spec, random);
        await changeResource(trial.cluster, trial.namespace, trial.ledger, target, patch);
      }
    } finally {
      if (target) busy.delete(target);
    }
    count += 1;
  };
  return Object.assign(act, { count: () => count });
}

async function later(ms: number, action: () => Promise<void>): Promise<void> {
  await sleep(ms);
  await action();
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}
