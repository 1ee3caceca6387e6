import type { ScenarioResult } from '../report.ts';
import type { RunContext } from '../run-context.ts';
import { operatorCrashes } from './operator-crashes.ts';

/** Every scenario, in the order a run plays them. */
export const SCENARIOS = {
  'operator-crashes': operatorCrashes,
} as const satisfies Record<string, (run: RunContext) => Promise<ScenarioResult>>;

export type ScenarioName = keyof typeof SCENARIOS;
export const SCENARIO_NAMES = Object.keys(SCENARIOS) as [ScenarioName, ...ScenarioName[]];
