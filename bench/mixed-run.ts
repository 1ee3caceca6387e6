// Every kind at once: GpuPods, GpuVms, ServerlessEndpoints and ServerlessTasks (one per endpoint) in
// equal parts, through one operator.
import { gpuPod, gpuVm, type Manifest, names, serverlessEndpoint, serverlessTask } from './manifests.ts';
import type { OperatorRun } from './operator.ts';
import { type ConvergenceResult, converge } from './phases/convergence.ts';
import { type DeletionResult, measureDeletion } from './phases/deletion.ts';
import { type StartupResult, startWithProbe } from './phases/startup.ts';
import { measureSteady, type SteadyResult } from './phases/steady.ts';
import { ensureNamespace, type Session } from './session.ts';
import { RESOURCES } from './stack.ts';
import { ResourceWatch } from './watch.ts';

export interface MixedResult {
  counts: Record<string, number>;
  startup: StartupResult;
  convergence: ConvergenceResult;
  steady: SteadyResult;
  deletion: DeletionResult;
}

/** Interleaved, so the controllers work at the same time; each task goes to the endpoint made with it. */
function mixedManifests(total: number): Manifest[] {
  const quarter = Math.ceil(total / 4);
  const pods = names('mp', quarter).map(gpuPod);
  const vms = names('mv', quarter).map(gpuVm);
  const endpoints = names('me', quarter).map(serverlessEndpoint);
  const tasks = names('mt', quarter).map((name, i) => serverlessTask(name, endpoints[i]?.name ?? ''));
  return pods.flatMap((pod, i) =>
    [pod, vms[i], endpoints[i], tasks[i]].filter((m): m is Manifest => m !== undefined),
  );
}

export async function runMixed(session: Session, total: number): Promise<MixedResult> {
  const { stack, log } = session;
  const namespace = 'mixed';
  await ensureNamespace(stack.kube, namespace);
  const watches = [
    RESOURCES.gpuPod,
    RESOURCES.gpuVm,
    RESOURCES.serverlessEndpoint,
    RESOURCES.serverlessTask,
  ].map((resource) => new ResourceWatch(stack.kube, resource, namespace, log));
  await Promise.all(watches.map((watch) => watch.start()));
  let operator: OperatorRun | undefined;
  try {
    const [podWatch] = watches as [ResourceWatch];
    const started = await startWithProbe(session, { namespace, callbacks: false }, podWatch);
    operator = started.operator;
    const manifests = mixedManifests(total);
    log.info({ total: manifests.length }, 'mixed convergence');
    const convergence = await converge(session, operator, namespace, manifests, watches);
    log.info('mixed steady state');
    const steady = await measureSteady(session, operator, watches);
    log.info('mixed deletion');
    const deletion = await measureDeletion(
      session,
      operator,
      namespace,
      [gpuPod('probe'), ...manifests],
      watches,
    );
    const counts: Record<string, number> = {};
    for (const manifest of manifests)
      counts[manifest.resource.kind] = (counts[manifest.resource.kind] ?? 0) + 1;
    return { counts, startup: started.startup, convergence, steady, deletion };
  } finally {
    await operator?.stop();
    await Promise.all(watches.map((watch) => watch.stop()));
  }
}
