// Replacing the operator process with N resources Ready: how long the shutdown takes, how soon the new
// process notices what changed while none ran, and what catching up costs.
import { type OperatorRun, type OperatorSettings, startOperator } from '../operator.ts';
import { until } from '../parallel.ts';
import { megabytes, RssSampler } from '../process-stats.ts';
import type { Session } from '../session.ts';
import { delta, round } from '../stats.ts';
import type { ResourceWatch } from '../watch.ts';
import { classify, waitForQuiet } from './steady.ts';

/** The pod list is one call, unpaged. */
const POD_LIST_PAGES = 1;

export interface RestartResult {
  shutdownMs: number;
  /** From spawning the new process to the status of a pod that failed while no operator ran. */
  catchUpMs: number;
  /** From spawning the new process until it went quiet. */
  quietAfterSeconds: number;
  /** Cloud calls from spawn until quiet. */
  cloudCalls: Record<string, number>;
  /** Pages one list of every pod takes: what a restart must cost at least. */
  listPages: number;
  /**
   * What the restart itself cost: one list's pages and every call that is neither a periodic list nor a
   * budgeted details refresh (a get per resource, say). The periodic lists and details are in cloudCalls.
   */
  restartCalls: number;
  peakRssMb: number;
}

export async function restartOperator(
  session: Session,
  previous: OperatorRun,
  settings: OperatorSettings,
  watch: ResourceWatch,
  victim: { name: string; id: string },
): Promise<{ operator: OperatorRun; restart: RestartResult }> {
  const { shutdownMs } = await previous.stop();
  const { sim } = session.stack;
  if (!sim.faults.failPod(victim.id, 'FAILED')) throw new Error(`pod ${victim.id} was not running`);
  const calls0 = sim.calls.snapshot().byOperation;
  const operator = await startOperator(session, settings);
  const rss = new RssSampler(operator.pid);
  try {
    await until(
      () => watch.phase.get(victim.name)?.phase === 'FAILED',
      `${victim.name} to show FAILED after the restart`,
      120_000,
      () => operator.warnings().slice(-3).join('\n'),
      20,
    );
    const catchUpMs = (watch.phase.get(victim.name)?.since ?? 0) - operator.startedAt;
    const quietSince = await waitForQuiet(session, [watch], 300_000);
    const cloudCalls = delta(calls0, sim.calls.snapshot().byOperation);
    return {
      operator,
      restart: {
        shutdownMs,
        catchUpMs,
        quietAfterSeconds: round((quietSince - operator.startedAt) / 1000),
        cloudCalls,
        listPages: POD_LIST_PAGES,
        restartCalls: POD_LIST_PAGES + classify(cloudCalls).other,
        peakRssMb: megabytes(rss.stop()),
      },
    };
  } finally {
    rss.stop();
  }
}
