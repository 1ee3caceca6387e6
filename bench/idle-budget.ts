// What idle checks may cost and what they must at least do (docs/idle-and-deadlines.md, "Cost"), for N
// idle-enabled running pods over a window: the same judgement for the operator's run and the in-process one.

/**
 * What the idle checks of a window were measured on: the operator process against the apiserver and the
 * simulator (bench/idle-run.ts), or the idle schedule alone, in the benchmark's process, against a fake
 * cloud, with no apiserver and no operator process (bench/idle-in-process.ts).
 */
export type IdleMeasuredBy = 'operator' | 'in-process';

export interface IdleBudget {
  /** Pods over the interval at least reach the budget: the budget, not the interval, sets the rate. */
  budgetBound: boolean;
  /** What the schedule's token bucket holds at most (src/managed/cloud-cache/detail-schedule.ts): max(rps, calls per check). */
  burst: number;
  /** Calls the budget allows in the window: --idle-check-rps × window + the burst. */
  ceiling: number;
  /** What the schedule should make: min(rps, pods / interval) × window. */
  expected: number;
  /**
   * At least this many, or undefined when the window cannot tell: a window shorter than one interval
   * while the interval sets the rate (each pod's one turn may fall in it or not).
   */
  floor: number | undefined;
  /** Most checks one pod may get in the window: one per interval, one more where a turn meets its edge. */
  perPodMax: number;
}

/**
 * The schedule releases a turn at its next 250 ms tick once the bucket holds a whole check; with a bucket
 * of one call (1 call/s) each release can slip by up to a tick, 1 call per 1.25 s at worst.
 */
const TICK_SLIP = 0.8;
/** While the interval sets the rate, a pod whose turn slips past the window's edge is not counted. */
const EDGE_SLIP = 0.9;

export function idleBudget(
  pods: number,
  windowSeconds: number,
  rps: number,
  intervalSeconds: number,
  callsPerCheck = 1,
): IdleBudget {
  const burst = Math.max(rps, callsPerCheck);
  const budgetBound = (pods * callsPerCheck) / intervalSeconds >= rps;
  const rate = Math.min(rps, (pods * callsPerCheck) / intervalSeconds);
  const rounds = Math.floor(windowSeconds / intervalSeconds);
  const floor = budgetBound
    ? Math.floor(TICK_SLIP * rps * windowSeconds)
    : rounds >= 1
      ? Math.floor(EDGE_SLIP * pods * callsPerCheck * rounds)
      : undefined;
  return {
    budgetBound,
    burst,
    ceiling: Math.floor(rps * windowSeconds + burst),
    expected: Math.round(rate * windowSeconds),
    floor,
    perPodMax: rounds + 1,
  };
}

export interface IdleResult {
  measuredBy: IdleMeasuredBy;
  /** Idle-enabled pods running while the window was open (keys, in-process): the ones checked. */
  pods: number;
  windowSeconds: number;
  checkRps: number;
  checkIntervalSeconds: number;
  /** The pods' `spec.idleStop.forMinutes`: the window each check reads. */
  forMinutes: number;
  /** GPU-metrics calls made by idle checks in the window. */
  calls: number;
  callsPerSecond: number;
  /** Pods checked at least once in the window. */
  podsChecked: number;
  maxChecksOfOnePod: number;
  budget: IdleBudget;
  /** Pods paused for being idle by the end of the window: 0, the pods are kept busy. */
  paused: number;
}

export interface IdleCheck {
  target: string;
  value: string;
  met: boolean;
}

/** Every target an idle-check window is judged by, as bench/targets.ts prints them. */
export function idleChecks(result: IdleResult): IdleCheck[] {
  const { calls, windowSeconds, callsPerSecond, budget, checkRps } = result;
  const checks: IdleCheck[] = [
    {
      target: 'idle checks within --idle-check-rps: calls ≤ rps × window + burst',
      value: `${calls} in ${windowSeconds} s, ${callsPerSecond}/s (budget ${budget.ceiling}: ${checkRps}/s × ${windowSeconds} s + ${budget.burst})`,
      met: calls <= budget.ceiling,
    },
  ];
  if (budget.floor !== undefined) {
    checks.push({
      target: budget.budgetBound
        ? 'idle checks use their budget: ≥ 80% of rps × window'
        : 'idle checks keep up: every pod checked about once per --idle-check-interval',
      value: `${calls} (at least ${budget.floor}, expected ${budget.expected} for ${result.pods} pods)`,
      met: calls >= budget.floor,
    });
  }
  checks.push(
    {
      target: 'no pod checked more often than --idle-check-interval',
      value: `at most ${result.maxChecksOfOnePod} checks of one pod (allowed ${budget.perPodMax}); ${result.podsChecked} pods checked`,
      met: result.maxChecksOfOnePod <= budget.perPodMax,
    },
    { target: 'busy pods never paused', value: String(result.paused), met: result.paused === 0 },
  );
  return checks;
}
