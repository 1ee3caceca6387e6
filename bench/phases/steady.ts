// The cost of doing nothing: cloud calls and apiserver writes per minute with every resource Ready
// and nothing changing, apart from the budgeted details refreshes (which write status by design and
// are counted apart).
import type { OperatorRun } from '../operator.ts';
import { sleep } from '../parallel.ts';
import { cpuBetween, markCpu, megabytes, usageOf } from '../process-stats.ts';
import { apiserverWrites } from '../prometheus.ts';
import type { Session } from '../session.ts';
import { delta, perMinute, round } from '../stats.ts';
import type { ResourceWatch } from '../watch.ts';

/** One call per kind per poll interval (a paged kind costs one call per page). */
const STATE_LISTS = new Set(['pods.list', 'vms.list', 'serverless.list']);
/** Per-resource data fetched under the --details-rps budget. */
const DETAIL_CALLS = /^(pods\.runtime|metrics\.|serverless\.tasks\.count)/;
/** The first call of one details fetch, per kind: one per fetch. */
const FETCH_MARKERS = new Set(['pods.runtime', 'serverless.tasks.count']);

export interface SteadyResult {
  resources: number;
  windowSeconds: number;
  /** How long the operator took to go quiet before the window opened. */
  quietAfterSeconds: number;
  cloudCallsPerMinute: Record<string, number>;
  stateListCallsPerPollInterval: number;
  detailCallsPerMinute: number;
  detailBudgetPerMinute: number;
  /** Calls that are neither state lists nor budgeted details (gets, creates, ...): should be 0. */
  otherCloudCalls: number;
  apiserverWritesPerMinute: Record<string, number>;
  detailFetches: number;
  /** Apiserver writes in the window that no details refresh explains: should be 0. */
  writesBeyondDetails: number;
  rssMb: number;
  cpu: ReturnType<typeof cpuBetween>;
}

type Calls = Record<string, number>;

/** Calls by class: state lists, budgeted details, fetches of details, and everything else. */
export function classify(calls: Calls) {
  let lists = 0;
  let details = 0;
  let fetches = 0;
  let other = 0;
  for (const [operation, count] of Object.entries(calls)) {
    if (STATE_LISTS.has(operation)) lists += count;
    else if (DETAIL_CALLS.test(operation)) details += count;
    else other += count;
    if (FETCH_MARKERS.has(operation)) fetches += count;
  }
  return { lists, details, fetches, other };
}

function resourceUpdates(watches: readonly ResourceWatch[]): number {
  return watches.reduce((sum, watch) => sum + watch.updates, 0);
}

/**
 * Waits until, for 3 s running, the operator made no cloud call beyond lists and details and wrote no
 * resource beyond the details refreshes. Returns when that quiet began (epoch ms); gives up, returning
 * now, after `timeoutMs`.
 */
export async function waitForQuiet(session: Session, watches: readonly ResourceWatch[], timeoutMs: number) {
  const began = Date.now();
  const snapshot = () => ({
    at: Date.now(),
    calls: session.stack.sim.calls.snapshot().byOperation,
    updates: resourceUpdates(watches),
  });
  const history = [snapshot()];
  while (Date.now() - began < timeoutMs) {
    await sleep(1000);
    history.push(snapshot());
    const from = history.at(-4);
    const to = history.at(-1);
    if (!from || !to) continue;
    const calls = classify(delta(from.calls, to.calls));
    if (calls.other === 0 && to.updates - from.updates <= calls.fetches) return from.at;
  }
  return Date.now();
}

export async function measureSteady(
  session: Session,
  operator: OperatorRun,
  watches: readonly ResourceWatch[],
): Promise<SteadyResult> {
  const { stack, options } = session;
  const waitBegan = Date.now();
  const quietAfterSeconds = round((await waitForQuiet(session, watches, 180_000)) / 1000 - waitBegan / 1000);
  const calls0 = stack.sim.calls.snapshot().byOperation;
  const writes0 = await apiserverWrites(stack.plane.kubeConfig);
  const cpu0 = markCpu(operator.pid, session.controlPlanePids);
  const began = Date.now();
  await sleep(options.steadySeconds * 1000);
  const ms = Date.now() - began;
  const calls = delta(calls0, stack.sim.calls.snapshot().byOperation);
  const writes = delta(writes0, await apiserverWrites(stack.plane.kubeConfig));
  const cpu = cpuBetween(cpu0, markCpu(operator.pid, session.controlPlanePids));
  const kinds = classify(calls);
  const totalWrites = Object.values(writes).reduce((sum, count) => sum + count, 0);
  return {
    resources: watches.reduce((sum, watch) => sum + watch.size, 0),
    windowSeconds: round(ms / 1000),
    quietAfterSeconds,
    cloudCallsPerMinute: Object.fromEntries(Object.entries(calls).map(([op, n]) => [op, perMinute(n, ms)])),
    stateListCallsPerPollInterval: round(kinds.lists / (ms / 1000 / options.pollInterval), 2),
    detailCallsPerMinute: perMinute(kinds.details, ms),
    detailBudgetPerMinute: options.detailsRps * 60,
    otherCloudCalls: kinds.other,
    apiserverWritesPerMinute: Object.fromEntries(
      Object.entries(writes).map(([key, n]) => [key, perMinute(n, ms)]),
    ),
    detailFetches: kinds.fetches,
    writesBeyondDetails: Math.max(0, totalWrites - kinds.fetches),
    rssMb: megabytes(usageOf(operator.pid)?.rssBytes ?? 0),
    cpu,
  };
}
