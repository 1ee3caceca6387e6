// One size, end to end: the apiserver's raw rate, then a fresh operator taking N GpuPods from apply to
// Ready, idle, through cloud failures and a restart, to deletion; then the same N as Pods on a virtual node.
import { loadavg } from 'node:os';
import { listPods } from './cloud.ts';
import { gpuPod, names } from './manifests.ts';
import type { OperatorRun } from './operator.ts';
import { type ConvergenceResult, converge } from './phases/convergence.ts';
import { type DeletionResult, measureDeletion } from './phases/deletion.ts';
import { measurePlacement, type PlacementResult } from './phases/placement.ts';
import { measureRaw, type RawResult } from './phases/raw.ts';
import { measureReaction } from './phases/reaction.ts';
import { type RestartResult, restartOperator } from './phases/restart.ts';
import { type StartupResult, startWithProbe } from './phases/startup.ts';
import { measureSteady, type SteadyResult } from './phases/steady.ts';
import { measureVirtualNode, type VirtualNodeResult } from './phases/virtual-node.ts';
import { attempt, type Outcome } from './results.ts';
import { ensureNamespace, type Session } from './session.ts';
import { RESOURCES } from './stack.ts';
import type { Distribution } from './stats.ts';
import { ResourceWatch } from './watch.ts';

export interface SizeResult {
  size: number;
  loadavgAtStart: number[];
  /** The 2-write reference loop. */
  raw: RawResult;
  /** The loop making the operator's writes per resource: what the operator's rate is judged against. */
  rawEqual: RawResult;
  startup: StartupResult;
  convergence: ConvergenceResult;
  /** Creates one at a time at --paced-rate on top of N Ready: latency without queueing. */
  paced: ConvergenceResult;
  steady: SteadyResult;
  reaction: { withCallbacksMs: Distribution; withoutCallbacksMs: Distribution };
  restart: RestartResult;
  deletion: DeletionResult;
  placement: PlacementResult;
  /**
   * The convergence phase's workload as Pods bound to a virtual node, run by an operator of its own; its
   * failure is recorded here, the GpuPods' figures kept.
   */
  virtualNode: Outcome<VirtualNodeResult>;
  /** Warning lines the operator logged, first few kept. */
  operatorWarnings: { count: number; first: string[] };
}

/** `count` names spread evenly over `pool`, starting at `offset`. */
function spread(pool: readonly string[], count: number, offset: number): string[] {
  const step = Math.max(1, Math.floor(pool.length / Math.max(1, count)));
  return Array.from(
    { length: Math.min(count, pool.length) },
    (_, i) => pool[(offset + i * step) % pool.length] as string,
  );
}

export async function runSize(session: Session, size: number): Promise<SizeResult> {
  const { stack, options, log } = session;
  const loadavgAtStart = loadavg().map((value) => Math.round(value * 100) / 100);
  log.info({ size }, 'raw apiserver throughput');
  const raw = await measureRaw(session, `raw-${size}`, size, 'reference');
  log.info({ size }, 'raw apiserver throughput, equal writes');
  const rawEqual = await measureRaw(session, `raw-eq-${size}`, size, 'equal');
  const namespace = `bench-${size}`;
  await ensureNamespace(stack.kube, namespace);
  const watch = new ResourceWatch(stack.kube, RESOURCES.gpuPod, namespace, log);
  await watch.start();
  let operator: OperatorRun | undefined;
  const warnings: string[] = [];
  try {
    log.info({ size }, 'startup');
    const started = await startWithProbe(session, { namespace, callbacks: true }, watch);
    operator = started.operator;
    log.info({ size }, 'convergence');
    const burst = names('pod', size).map(gpuPod);
    const convergence = await converge(session, operator, namespace, burst, [watch]);
    log.info({ size, convergence: convergence.seconds }, 'paced creates');
    const pacedManifests = names('lat', options.pacedCount).map(gpuPod);
    const paced = await converge(session, operator, namespace, pacedManifests, [watch], {
      perSecond: options.pacedRate,
    });
    log.info({ size }, 'steady state');
    const steady = await measureSteady(session, operator, [watch]);
    const ids = new Map((await listPods(session)).map((pod) => [pod.name, pod.id]));
    const pool = burst.map((manifest) => manifest.name);
    log.info({ size }, 'reaction with callbacks');
    const withCallbacksMs = await measureReaction(
      session,
      watch,
      spread(pool, options.reactionCount, 0),
      ids,
    );
    log.info({ size }, 'restart');
    const victim = spread(pool, 1, 1)[0] as string;
    warnings.push(...operator.warnings());
    const restarted = await restartOperator(session, operator, { namespace, callbacks: false }, watch, {
      name: victim,
      id: ids.get(victim) ?? '',
    });
    operator = restarted.operator;
    log.info({ size }, 'reaction without callbacks');
    const withoutCallbacksMs = await measureReaction(
      session,
      watch,
      spread(pool, options.reactionCount, 2),
      ids,
    );
    log.info({ size }, 'deletion');
    const deletion = await measureDeletion(
      session,
      operator,
      namespace,
      [gpuPod('probe'), ...burst, ...pacedManifests],
      [watch],
    );
    log.info({ size }, 'placement');
    const placement = await measurePlacement(session, namespace, size, watch);
    warnings.push(...operator.warnings());
    await operator.stop();
    operator = undefined;
    log.info({ size }, 'virtual node');
    const virtualNode = await attempt(() => measureVirtualNode(session, size));
    return {
      size,
      loadavgAtStart,
      raw,
      rawEqual,
      startup: started.startup,
      convergence,
      paced,
      steady,
      reaction: { withCallbacksMs, withoutCallbacksMs },
      restart: restarted.restart,
      deletion,
      placement,
      virtualNode,
      operatorWarnings: { count: warnings.length, first: warnings.slice(0, 5) },
    };
  } finally {
    await operator?.stop();
    await watch.stop();
  }
}
