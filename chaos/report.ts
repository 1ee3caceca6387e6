import type { Findings } from './audit.ts';
import type { Convergence } from './convergence.ts';

export type Figure = number | string | boolean | null;

/** What one scenario reports: the summary line's figures, the scenario's own, and what went wrong. */
export interface ScenarioResult {
  readonly scenario: string;
  /** Creates, spec changes and deletes of custom resources. */
  readonly ops: number;
  /** SIGKILLs of operator processes, apiserver restarts and connection cuts. */
  readonly kills: number;
  readonly duplicates: number;
  readonly leaks: number;
  readonly stuckFinalizers: number;
  /** From the end of the disruption until every resource was converged; null if it never was. */
  readonly convergenceMs: number | null;
  /** API calls the simulator received during the scenario. */
  readonly apiCalls: number;
  /** The same workload's calls without faults, where the scenario measures one. */
  readonly baselineApiCalls: number | null;
  /** Figures particular to the scenario (failover times, reconcile rates, hits). */
  readonly figures: Readonly<Record<string, Figure>>;
  /** Broken invariants (duplicates, leaks, stuck finalizers, crashes, leaked secrets...). */
  readonly violations: readonly string[];
  /** Targets (times, ratios, rates) missed; reported apart from invariants. */
  readonly missedTargets: readonly string[];
  /** Details behind the figures: findings, unconverged resources. */
  readonly notes: readonly string[];
  readonly durationMs: number;
}

/** What a churn scenario measured, before it is judged. */
export interface ChurnMeasure {
  readonly scenario: string;
  readonly startedAt: number;
  readonly ops: number;
  readonly kills: number;
  readonly convergence: Convergence;
  readonly cleanup: Convergence;
  readonly findings: Findings;
  /** Operator processes that ended on their own. */
  readonly crashes: number;
  readonly apiCalls: number;
  readonly baselineApiCalls?: number;
  readonly figures?: Readonly<Record<string, Figure>>;
  readonly violations?: readonly string[];
  readonly missedTargets?: readonly string[];
}

/** Judges a churn scenario: the invariants every one of them keeps, plus its own. */
export function churnResult(measure: ChurnMeasure): ScenarioResult {
  const { findings, convergence, cleanup, crashes } = measure;
  const violations: string[] = [];
  if (findings.duplicates > 0) violations.push(`${findings.duplicates} duplicate cloud object(s)`);
  if (findings.leaks > 0) violations.push(`${findings.leaks} leaked cloud object(s)`);
  if (findings.stuckFinalizers > 0) violations.push(`${findings.stuckFinalizers} stuck finalizer(s)`);
  if (!convergence.converged) violations.push(`${convergence.unconverged} resource(s) never converged`);
  if (!cleanup.converged) violations.push(`${cleanup.unconverged} resource(s) not cleaned up`);
  if (crashes > 0) violations.push(`the operator crashed ${crashes} time(s)`);
  return {
    scenario: measure.scenario,
    ops: measure.ops,
    kills: measure.kills,
    duplicates: findings.duplicates,
    leaks: findings.leaks,
    stuckFinalizers: findings.stuckFinalizers,
    convergenceMs: convergence.converged ? convergence.ms : null,
    apiCalls: measure.apiCalls,
    baselineApiCalls: measure.baselineApiCalls ?? null,
    figures: { cleanupS: round(cleanup.ms / 1000), ...measure.figures },
    violations: [...violations, ...(measure.violations ?? [])],
    missedTargets: measure.missedTargets ?? [],
    notes: [...findings.notes, ...convergence.problems, ...cleanup.problems],
    durationMs: Date.now() - measure.startedAt,
  };
}

/** Rounds to two decimals, for figures. */
export function round(value: number): number {
  return Math.round(value * 100) / 100;
}

function seconds(ms: number | null): string {
  return ms === null ? 'never' : `${(ms / 1000).toFixed(1)}s`;
}

/** One line of figures per scenario, as `npm run chaos` prints it. */
export function summaryLine(result: ScenarioResult): string {
  const calls =
    result.baselineApiCalls === null
      ? `${result.apiCalls}`
      : `${result.apiCalls} (${(result.apiCalls / result.baselineApiCalls).toFixed(2)}x baseline ${result.baselineApiCalls})`;
  const extra = Object.entries(result.figures)
    .map(([name, value]) => `${name}=${value}`)
    .join(' ');
  const verdict =
    result.violations.length > 0 ? 'FAIL' : result.missedTargets.length > 0 ? 'TARGET MISSED' : 'ok';
  return (
    `${result.scenario.padEnd(17)} ${verdict.padEnd(13)} ops=${result.ops} kills=${result.kills} ` +
    `duplicates=${result.duplicates} leaks=${result.leaks} stuck=${result.stuckFinalizers} ` +
    `converged=${seconds(result.convergenceMs)} calls=${calls}${extra ? ` | ${extra}` : ''}`
  );
}

/** The worst of several audits of one scenario (each count is of the same objects, seen at different times). */
export function worstOf(...all: Findings[]): Findings {
  return {
    duplicates: Math.max(0, ...all.map((findings) => findings.duplicates)),
    leaks: Math.max(0, ...all.map((findings) => findings.leaks)),
    stuckFinalizers: Math.max(0, ...all.map((findings) => findings.stuckFinalizers)),
    notes: [...new Set(all.flatMap((findings) => findings.notes))],
  };
}
