import type { ScenarioResult } from '../report.ts';
import type { RunContext } from '../run-context.ts';
import { badInput } from './bad-input.ts';
import { cloudFaults } from './cloud-faults.ts';
import { leaderFailover } from './leader-failover.ts';
import { operatorCrashes } from './operator-crashes.ts';
import { secrets } from './secrets.ts';
import { spendControls } from './spend-controls.ts';
import { taskCrashes } from './task-crashes.ts';
import { virtualNode } from './virtual-node.ts';
import { watchDisruption } from './watch-disruption.ts';

/** Every scenario, in the order a run plays them. */
export const SCENARIOS = {
  'operator-crashes': operatorCrashes,
  'cloud-faults': cloudFaults,
  'watch-disruption': watchDisruption,
  'leader-failover': leaderFailover,
  'bad-input': badInput,
  secrets,
  'task-crashes': taskCrashes,
  'spend-controls': spendControls,
  'virtual-node': virtualNode,
} as const satisfies Record<string, (run: RunContext) => Promise<ScenarioResult>>;

export type ScenarioName = keyof typeof SCENARIOS;
export const SCENARIO_NAMES = Object.keys(SCENARIOS) as [ScenarioName, ...ScenarioName[]];
