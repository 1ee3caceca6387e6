import type { FaultPatch } from '../../src/sim/index.ts';
import {
  type DriveStats,
  type Life,
  operations,
  planChurn,
  planPlaced,
  planRefused,
  planSpotRecovery,
} from '../driver.ts';
import { countMessages, failuresByResource, failuresOf } from '../reconcile-log.ts';
import { type ChurnMeasure, churnResult, round, type ScenarioResult } from '../report.ts';
import type { RunContext } from '../run-context.ts';
import { PLACED_POOL } from '../workload.ts';
import type { LogLine } from '../transcripts.ts';
import { type ApiCalls, type Settled, Trial } from '../trial.ts';

/**
 * 30% of all calls are faulted, a third each: HTTP 500 before any effect, 429 with Retry-After, and a
 * dropped connection — for the first half of the run after the call took effect (the create that
 * happened but whose answer was lost), then before. Every call is also slowed, and running resources
 * fail, degrade and are preempted.
 */
const FAULTS: FaultPatch = {
  errorRate: 0.1,
  rateLimitRate: 0.1,
  retryAfterSeconds: 1,
  dropRate: 0.1,
  dropAfterEffect: true,
  latencyMs: 50,
  podFailureRate: 0.01,
  podDegradeRate: 0.01,
  spotPreemptionRate: 0.02,
};

/** Most API calls the faulted run may make, as a multiple of the same workload without faults. */
const CALLS_TARGET = 3;

interface Played {
  readonly namespace: string;
  /** Running spot pods and VMs preempted on purpose at the end of the faulted drive. */
  readonly preempted: number;
  readonly stats: DriveStats;
  readonly settled: Settled;
  readonly crashes: number;
  readonly lines: readonly LogLine[];
  /** Times the operator moved a placed pod to its next offer, the cloud having refused one for lack of room. */
  readonly placementMoves: number;
}

/**
 * Scenario 2. The same workload twice, in one run: without faults (the baseline), then with the
 * simulator failing calls at a high rate. Once the faults stop every resource must converge, with no
 * duplicate or leak, within a stated multiple of the baseline's API calls (counted until convergence);
 * the resources the cloud refuses for good must not be asked about again.
 */
export async function cloudFaults(run: RunContext): Promise<ScenarioResult> {
  const startedAt = Date.now();
  const shape = run.profile.faults;
  const random = run.random.fork('faults');
  const lives = [
    ...planChurn(random.fork('plan'), shape),
    ...planRefused(random.fork('refused'), shape.spreadMs),
    planSpotRecovery(random.fork('spot'), shape.spreadMs),
    ...planPlaced(random.fork('placed'), shape.spreadMs),
  ];
  const baseline = await play(run, 'faults-baseline', lives, false);
  const faulted = await play(run, 'faults', lives, true);
  const calls = faulted.settled.callsAtConvergence.total;
  const baselineCalls = baseline.settled.callsAtConvergence.total;
  const retried = terminalRetries(baseline, lives) + terminalRetries(faulted, lives);
  const ratio = calls / baselineCalls;
  const faultedClasses = callsByClass(faulted.settled.callsAtConvergence);
  const baselineClasses = callsByClass(baseline.settled.callsAtConvergence);
  return churnResult({
    ...measureOf(faulted, startedAt),
    baselineApiCalls: baselineCalls,
    figures: {
      ratio: round(ratio),
      listCalls: faultedClasses.lists,
      createCalls: faultedClasses.creates,
      baselineListCalls: baselineClasses.lists,
      baselineCreateCalls: baselineClasses.creates,
      baselineConvergedS: round(baseline.settled.convergence.ms / 1000),
      ambiguousRecoveries: countMessages(faulted.lines, 'made by an interrupted create'),
      preempted: faulted.preempted,
      preemptedAndRecreated: countMessages(faulted.lines, 'before creating its replacement'),
      placementMoves: faulted.placementMoves,
      baselinePlacementMoves: baseline.placementMoves,
      terminalRetries: retried,
    },
    violations: [
      ...churnResult(measureOf(baseline, startedAt)).violations.map((line) => `baseline: ${line}`),
      ...(retried > 0 ? [`creates refused for good were sent again ${retried} time(s)`] : []),
    ],
    missedTargets:
      ratio > CALLS_TARGET ? [`API calls ${round(ratio)}x the fault-free run (target ${CALLS_TARGET}x)`] : [],
  });
}

async function play(
  run: RunContext,
  label: string,
  lives: readonly Life[],
  faults: boolean,
): Promise<Played> {
  const trial = await Trial.open(run, { label });
  try {
    // The cheapest offer placed pods accept has room for one: the others are refused and move on.
    trial.sim.capacity.setTotal(PLACED_POOL.region, PLACED_POOL.gpuType, PLACED_POOL.gpus);
    await trial.startOperators();
    trial.sim.calls.reset();
    if (faults) trial.sim.faults.set(FAULTS);
    const spread = Math.max(...lives.map((life) => life.createAt));
    const halfway = setTimeout(() => trial.sim.faults.set({ dropAfterEffect: false }), spread / 2);
    const stats = await trial.drive(lives).finally(() => clearTimeout(halfway));
    // Every spot object still running is taken back at once: those with recoveryPolicy Recreate must
    // each end with exactly one live replacement, the others stay down.
    const preempted = faults ? preemptRunningSpot(trial) : 0;
    trial.sim.faults.reset();
    let moves = 0;
    for (const life of lives.filter((each) => each.spec.placement !== undefined)) {
      const events = await trial.cluster.events(trial.namespace, life.name);
      moves += events.filter((event) => event.reason === 'PlacementMoved').length;
    }
    const settled = await trial.settle();
    return {
      namespace: trial.namespace,
      preempted,
      stats,
      settled,
      crashes: trial.crashes,
      lines: trial.logLines(),
      placementMoves: moves,
    };
  } finally {
    await trial.close();
  }
}

function measureOf(played: Played, startedAt: number): ChurnMeasure {
  return {
    scenario: 'cloud-faults',
    startedAt,
    ops: operations(played.stats),
    kills: 0,
    ...played.settled,
    crashes: played.crashes,
    apiCalls: played.settled.callsAtConvergence.total,
  };
}

/**
 * Creates of refused resources sent again after a terminal answer: a terminal failure is not retried
 * until the user changes the resource (transient failures before it may be).
 */
function terminalRetries(played: Played, lives: readonly Life[]): number {
  const failures = failuresByResource(played.lines);
  return lives
    .filter((life) => life.rejected)
    .map((life) => failuresOf(failures, life.kind, played.namespace, life.name).filter((f) => f.terminal))
    .reduce((sum, terminal) => sum + Math.max(0, terminal.length - 1), 0);
}

function preemptRunningSpot(trial: Trial): number {
  const state = trial.sim.state.snapshot();
  const running = [...state.pods, ...state.vms].filter((object) => object.isSpot && object.status === 'RUNNING');
  return running.filter((object) => trial.sim.faults.preempt(object.id)).length;
}

/** Calls of the periodic lists and of creates, out of all calls. */
function callsByClass(calls: ApiCalls): { lists: number; creates: number } {
  const sum = (suffix: string) =>
    Object.entries(calls.byOperation)
      .filter(([operation]) => operation.endsWith(suffix))
      .reduce((total, [, count]) => total + count, 0);
  return { lists: sum('.list'), creates: sum('.create') };
}
