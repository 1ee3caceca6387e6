// Starting the operator: time to its first reconcile, and what it costs while idle.
import { gpuPod } from '../manifests.ts';
import { type OperatorRun, type OperatorSettings, startOperator } from '../operator.ts';
import { sleep, until } from '../parallel.ts';
import { cpuBetween, markCpu, megabytes, usageOf } from '../process-stats.ts';
import { createResource, type Session } from '../session.ts';
import type { ResourceWatch } from '../watch.ts';

export interface StartupResult {
  /** From spawning the process to its first write to a resource that was waiting for it. */
  firstReconcileMs: number;
  /** From spawning the process to that resource Ready. */
  firstReadyMs: number;
  idleRssMb: number;
  idleCpuCores: number;
}

const IDLE_SECONDS = 10;

/**
 * Creates one GpuPod (`probe`) before the operator runs, starts the operator, and times how soon it
 * takes the probe on. Then measures the idle process.
 */
export async function startWithProbe(
  session: Session,
  settings: OperatorSettings,
  watch: ResourceWatch,
): Promise<{ operator: OperatorRun; startup: StartupResult }> {
  await createResource(session.stack.kube, settings.namespace, gpuPod('probe'));
  const operator = await startOperator(session, settings);
  const detail = () => operator.warnings().slice(-3).join('\n');
  await until(() => watch.finalizedAt.has('probe'), 'the first reconcile', 30_000, detail);
  await until(() => watch.readyAt.has('probe'), 'the probe Ready', 30_000, detail);
  const firstReconcileMs = (watch.finalizedAt.get('probe') ?? 0) - operator.startedAt;
  const firstReadyMs = (watch.readyAt.get('probe') ?? 0) - operator.startedAt;
  await sleep(2000);
  const from = markCpu(operator.pid, session.controlPlanePids);
  await sleep(IDLE_SECONDS * 1000);
  const idle = cpuBetween(from, markCpu(operator.pid, session.controlPlanePids));
  return {
    operator,
    startup: {
      firstReconcileMs,
      firstReadyMs,
      idleRssMb: megabytes(usageOf(operator.pid)?.rssBytes ?? 0),
      idleCpuCores: idle.operatorCores,
    },
  };
}
