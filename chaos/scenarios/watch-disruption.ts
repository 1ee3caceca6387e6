import { join } from 'node:path';
import { writeKubeconfig } from '../../src/local/controlplane/kubeconfig.ts';
import type { ControlPlane } from '../../src/local/controlplane.ts';
import { sleep } from '../../src/runtime/delay.ts';
import { noteConverged } from '../convergence.ts';
import { changeResource, createResource, deleteResource, operations, planChurn } from '../driver.ts';
import type { Tracked } from '../ledger.ts';
import type { Random } from '../random.ts';
import { churnResult, round, type ScenarioResult } from '../report.ts';
import type { RunContext } from '../run-context.ts';
import { TcpProxy } from '../tcp-proxy.ts';
import { Trial } from '../trial.ts';
import { KIND_NAMES, resourceName, specChange, validSpec } from '../workload.ts';

/** The suite's `--resync` (OPERATOR_FLAGS): the bound on noticing anything a watch missed. */
const RESYNC_MS = 30_000;
/** Changes made around each connection cut land within this window, cuts at random instants in it. */
const CUT_WINDOW_MS = 2_000;
const CUTS_PER_WINDOW = 3;
const SAMPLE_MS = 500;

/**
 * Scenario 3. The operator reaches the apiserver through a relay the suite controls. While resources
 * are created, changed and deleted, the suite cuts every connection (watches and requests in flight)
 * and stops and restarts the apiserver (etcd keeps the data). No change may be missed: every one must
 * converge, within the resync period.
 */
export async function watchDisruption(run: RunContext): Promise<ScenarioResult> {
  const startedAt = Date.now();
  const profile = run.profile.watch;
  const random = run.random.fork('watch');
  const proxy = await TcpProxy.start(Number(new URL(run.plane.server).port));
  const trial = await Trial.open(run, {
    label: 'watch',
    kubeconfigPath: await proxiedKubeconfig(run.plane, proxy.port),
  });
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
    let cuts = 0;
    let connectionsCut = 0;
    let restarts = 0;
    for (let round = 0; round < profile.disruptions; round += 1) {
      const changes = Array.from({ length: profile.changesPerDisruption }, () => random.between(0, 1));
      if (round % 2 === 0) {
        const cutAt = Array.from({ length: CUTS_PER_WINDOW }, () => random.between(0, CUT_WINDOW_MS));
        await Promise.all([
          ...changes.map((share) => later(share * CUT_WINDOW_MS, change)),
          ...cutAt.map((ms) =>
            later(ms, async () => {
              connectionsCut += proxy.cutAll();
              cuts += 1;
            }),
          ),
        ]);
      } else {
        const downMs = random.between(...profile.apiserverDownMs);
        await run.plane.stopApiserver();
        restarts += 1;
        const during = Promise.all(changes.map((share) => later(share * downMs, change)));
        await sleep(downMs);
        await run.plane.startApiserver();
        await during;
      }
    }
    const disruptedUntil = Date.now();
    const settled = await trial.settle();
    const latencies = trial.ledger.settlements
      .filter(({ changedAt }) => changedAt >= disruptedFrom && changedAt <= disruptedUntil)
      .map(({ changedAt, convergedAt }) => convergedAt - changedAt);
    const worst = Math.max(0, ...latencies);
    return churnResult({
      scenario: 'watch-disruption',
      startedAt,
      ops: operations(stats) + change.count(),
      kills: cuts + restarts,
      ...settled,
      crashes: trial.crashes,
      apiCalls: trial.sim.calls.snapshot().total,
      figures: {
        cuts,
        connectionsCut,
        apiserverRestarts: restarts,
        changesDuringDisruption: latencies.length,
        worstChangeToConvergedS: round(worst / 1000),
        medianChangeToConvergedS: round(median(latencies) / 1000),
        boundS: RESYNC_MS / 1000,
      },
      missedTargets:
        worst > RESYNC_MS
          ? [
              `a change took ${round(worst / 1000)} s to converge, over the ${RESYNC_MS / 1000} s resync bound`,
            ]
          : [],
    });
  } finally {
    sampling.abort();
    await trial.close();
    await proxy.close();
  }
}

/** The admin kubeconfig, pointed at the relay instead of the apiserver. */
async function proxiedKubeconfig(plane: ControlPlane, port: number): Promise<string> {
  const cluster = plane.kubeConfig.getCurrentCluster();
  const token = plane.kubeConfig.getCurrentUser()?.token;
  if (!cluster?.caData || !token) throw new Error('the admin kubeconfig has no CA data or token');
  const path = join(plane.dataDir, 'chaos-proxied.kubeconfig');
  await writeKubeconfig(path, {
    server: `https://127.0.0.1:${port}`,
    caPem: Buffer.from(cluster.caData, 'base64').toString('utf8'),
    name: 'chaos-proxied',
    token,
  });
  return path;
}

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
