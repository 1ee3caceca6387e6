import { operations, planChurn } from '../driver.ts';
import { killRepeatedly } from '../killer.ts';
import { countMessages } from '../reconcile-log.ts';
import { churnResult, type ScenarioResult } from '../report.ts';
import type { RunContext } from '../run-context.ts';
import { Trial } from '../trial.ts';

/**
 * The cloud's answers reach the operator this late: a kill then often lands after a create was carried
 * out and before its id was recorded — the case crash recovery exists for.
 */
const ANSWER_DELAY_MS = 400;

/**
 * Scenario 1. Resources of every kind are created, changed and deleted while the operator process is
 * SIGKILLed at random instants and restarted. Afterwards the simulator's own state must show exactly
 * one cloud object per live resource, none live for deleted ones, none without an owner, and no
 * finalizer left on a deleted resource.
 */
export async function operatorCrashes(run: RunContext): Promise<ScenarioResult> {
  const startedAt = Date.now();
  const shape = run.profile.crashes;
  const random = run.random.fork('crashes');
  const trial = await Trial.open(run, { label: 'crashes', answerDelayMs: ANSWER_DELAY_MS });
  try {
    await trial.startOperators();
    const churn = trial.drive(planChurn(random, shape));
    const [stats, kills] = await Promise.all([
      churn,
      killRepeatedly(trial.replica, random.fork('kills'), shape.killAfterMs, churn),
    ]);
    const settled = await trial.settle();
    return churnResult({
      scenario: 'operator-crashes',
      startedAt,
      ops: operations(stats),
      kills: kills.kills,
      ...settled,
      crashes: trial.crashes,
      apiCalls: trial.sim.calls.snapshot().total,
      figures: {
        killsWhileWorking: kills.whileWorking,
        creates: stats.creates,
        deletes: stats.deletes,
        recoveredCreates: countMessages(trial.logLines(), 'made by an interrupted create'),
      },
    });
  } finally {
    await trial.close();
  }
}
