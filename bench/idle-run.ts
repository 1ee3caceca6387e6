// An idle-check run (--idle-check-window): a fresh operator takes N GpuPods that ask for idle stop
// (spec.idleStop) to Ready, and the benchmark counts the GPU-metrics calls its idle checks make over a
// window, once every pod is old enough to be judged idle, against the budget the operator was given.
// The pods stay busy (the simulator's utilisation is 40–100%), so every check reads a series and none
// pauses a pod. In place of the standard phases of a size run, not on top of them.
import { loadavg } from 'node:os';
import type { CallRecord } from '../src/sim/index.ts';
import { type IdleResult, idleBudget } from './idle-budget.ts';
import { gpuPod, IDLE_STOP, idleGpuPod, names } from './manifests.ts';
import type { OperatorRun } from './operator.ts';
import { sleep } from './parallel.ts';
import { type ConvergenceResult, converge } from './phases/convergence.ts';
import { type DeletionResult, measureDeletion } from './phases/deletion.ts';
import { type StartupResult, startWithProbe } from './phases/startup.ts';
import { cpuBetween, markCpu, megabytes, usageOf } from './process-stats.ts';
import { ensureNamespace, type Session } from './session.ts';
import { RESOURCES } from './stack.ts';
import { delta, round } from './stats.ts';
import { ResourceWatch } from './watch.ts';

/** The idle check's one call; a details refresh makes it too, with one of each other metric. */
const IDLE_OPERATION = 'metrics.gpu';
/** Called once by every details refresh and never by an idle check. */
const DETAILS_TWIN = 'metrics.cpu';
/**
 * After the last pod's first idle window: a turn released then runs its check (the schedule ticks every
 * 250 ms), and the Ready time in status has whole seconds.
 */
const WINDOW_MARGIN_MS = 15_000;

export interface IdleRunResult {
  size: number;
  loadavgAtStart: number[];
  startup: StartupResult;
  convergence: ConvergenceResult;
  /** From the last pod Ready to the window's opening: the pods' first idle window, and the margin. */
  waitSeconds: number;
  idle: IdleResult;
  /** Every cloud call of the window, by operation (idle checks, details refreshes, lists). */
  cloudCalls: Record<string, number>;
  /** Details refreshes in the window (one `pods.runtime` each): their `metrics.gpu` are not idle checks. */
  detailFetches: number;
  windowRssMb: number;
  windowCpu: ReturnType<typeof cpuBetween>;
  deletion: DeletionResult;
  operatorWarnings: { count: number; first: string[] };
}

/** The calls received since `marker`, the last record of an earlier copy of the log (identity survives trims). */
function logSince(log: readonly CallRecord[], marker: CallRecord | undefined): readonly CallRecord[] {
  if (marker === undefined) return log;
  const at = log.lastIndexOf(marker);
  if (at < 0) throw new Error('the simulator trimmed its call log past the window: no per-pod counts');
  return log.slice(at + 1);
}

/** Idle checks per pod id: each pod's `metrics.gpu` calls less its `metrics.cpu` calls (details). */
export function idleChecksPerPod(calls: readonly CallRecord[]): Map<string, number> {
  const perPod = new Map<string, number>();
  for (const call of calls) {
    const step = call.operation === IDLE_OPERATION ? 1 : call.operation === DETAILS_TWIN ? -1 : 0;
    const id = call.params.pod_id;
    if (step !== 0 && id !== undefined) perPod.set(id, (perPod.get(id) ?? 0) + step);
  }
  return perPod;
}

export async function runIdle(session: Session, size: number): Promise<IdleRunResult> {
  const { stack, options, log } = session;
  const loadavgAtStart = loadavg().map((value) => Math.round(value * 100) / 100);
  const namespace = `idle-${size}`;
  await ensureNamespace(stack.kube, namespace);
  const watch = new ResourceWatch(stack.kube, RESOURCES.gpuPod, namespace, log);
  await watch.start();
  let operator: OperatorRun | undefined;
  try {
    log.info({ size }, 'idle-check run: startup');
    const started = await startWithProbe(session, { namespace, callbacks: true }, watch);
    operator = started.operator;
    const manifests = names('idle', size).map(idleGpuPod);
    log.info({ size }, 'idle-check run: convergence');
    const convergence = await converge(session, operator, namespace, manifests, [watch]);
    const lastReady = Math.max(...manifests.map((manifest) => watch.readyAt.get(manifest.name) ?? 0));
    const opensAt = lastReady + IDLE_STOP.forMinutes * 60_000 + WINDOW_MARGIN_MS;
    log.info(
      { size, waitSeconds: Math.round((opensAt - Date.now()) / 1000) },
      'idle-check run: waiting until every pod has run a whole idle window',
    );
    await sleep(Math.max(0, opensAt - Date.now()));
    const idleNames = new Set(manifests.map((manifest) => manifest.name));
    const ours = () => stack.sim.state.snapshot().pods.filter((pod) => idleNames.has(pod.name));
    const running = ours().filter((pod) => pod.status === 'RUNNING').length;
    log.info({ size, running, seconds: options.idleCheckWindow }, 'idle-check run: window');
    const calls0 = stack.sim.calls.snapshot().byOperation;
    const marker = stack.sim.calls.log().at(-1);
    const cpu0 = markCpu(operator.pid, session.controlPlanePids);
    const began = Date.now();
    await sleep(options.idleCheckWindow * 1000);
    const ms = Date.now() - began;
    const calls = delta(calls0, stack.sim.calls.snapshot().byOperation);
    const perPod = idleChecksPerPod(logSince(stack.sim.calls.log(), marker));
    const windowCpu = cpuBetween(cpu0, markCpu(operator.pid, session.controlPlanePids));
    const windowRssMb = megabytes(usageOf(operator.pid)?.rssBytes ?? 0);
    const paused = ours().filter((pod) => pod.status === 'PAUSED' || pod.status === 'PAUSING').length;
    const idleCalls = Math.max(0, (calls[IDLE_OPERATION] ?? 0) - (calls[DETAILS_TWIN] ?? 0));
    const windowSeconds = round(ms / 1000);
    const counts = [...perPod.values()];
    const idle: IdleResult = {
      measuredBy: 'operator',
      pods: running,
      windowSeconds,
      checkRps: options.idleCheckRps,
      checkIntervalSeconds: options.idleCheckInterval,
      forMinutes: IDLE_STOP.forMinutes,
      calls: idleCalls,
      callsPerSecond: round(idleCalls / windowSeconds, 3),
      podsChecked: counts.filter((n) => n > 0).length,
      maxChecksOfOnePod: Math.max(0, ...counts),
      budget: idleBudget(running, windowSeconds, options.idleCheckRps, options.idleCheckInterval),
      paused,
    };
    log.info({ size, calls: idleCalls, budget: idle.budget.ceiling }, 'idle-check run: deletion');
    const deletion = await measureDeletion(
      session,
      operator,
      namespace,
      [gpuPod('probe'), ...manifests],
      [watch],
    );
    return {
      size,
      loadavgAtStart,
      startup: started.startup,
      convergence,
      waitSeconds: round((began - lastReady) / 1000),
      idle,
      cloudCalls: calls,
      detailFetches: calls['pods.runtime'] ?? 0,
      windowRssMb,
      windowCpu,
      deletion,
      operatorWarnings: { count: operator.warnings().length, first: operator.warnings().slice(0, 5) },
    };
  } finally {
    await operator?.stop();
    await watch.stop();
  }
}
