import type { ScenarioResult } from './report.ts';
import type { RunContext } from './run-context.ts';
import { SCENARIOS, type ScenarioName } from './scenarios/index.ts';

/**
 * Plays one scenario. A scenario that throws (the apiserver never came back, the driver could not
 * write) is a failed result, not the end of the run: the others still tell what they found.
 */
export async function playScenario(run: RunContext, name: ScenarioName): Promise<ScenarioResult> {
  const startedAt = Date.now();
  run.log(`${name}: starting`);
  try {
    return await SCENARIOS[name](run);
  } catch (error) {
    return {
      scenario: name,
      ops: 0,
      kills: 0,
      duplicates: 0,
      leaks: 0,
      stuckFinalizers: 0,
      convergenceMs: null,
      apiCalls: 0,
      baselineApiCalls: null,
      figures: {},
      violations: [`the scenario failed: ${error instanceof Error ? error.message : String(error)}`],
      missedTargets: [],
      notes: [error instanceof Error ? (error.stack ?? error.message) : String(error)],
      durationMs: Date.now() - startedAt,
    };
  }
}
