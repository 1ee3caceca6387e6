// Deleting every resource: from the first delete to the last resource gone from the apiserver (its
// finalizer released) and the last cloud resource deleted.
import { liveCloudResources } from '../cloud.ts';
import type { Manifest } from '../manifests.ts';
import type { OperatorRun } from '../operator.ts';
import { forEachConcurrently, until } from '../parallel.ts';
import { cpuBetween, markCpu } from '../process-stats.ts';
import { deleteResource, type Session } from '../session.ts';
import { round } from '../stats.ts';
import type { ResourceWatch } from '../watch.ts';

export interface DeletionResult {
  count: number;
  /** First delete sent until every resource is gone and every cloud resource deleted. */
  seconds: number;
  resourcesPerSecond: number;
  cpu: ReturnType<typeof cpuBetween>;
}

export async function measureDeletion(
  session: Session,
  operator: OperatorRun,
  namespace: string,
  manifests: readonly Manifest[],
  watches: readonly ResourceWatch[],
): Promise<DeletionResult> {
  const cpu0 = markCpu(operator.pid, session.controlPlanePids);
  const began = Date.now();
  await forEachConcurrently(manifests, session.options.concurrency, (manifest) =>
    deleteResource(session.stack.kube, manifest.resource, namespace, manifest.name),
  );
  const gone = () => manifests.filter((m) => watches.some((watch) => watch.goneAt.has(m.name))).length;
  await until(
    () => gone() === manifests.length,
    'every resource gone',
    60_000 + 50 * manifests.length,
    () => `(${gone()} gone)`,
    200,
  );
  const names = new Set(manifests.map((manifest) => manifest.name));
  await until(
    () => liveCloudResources(session, names) === 0,
    'every cloud resource deleted',
    60_000,
    () => `(${liveCloudResources(session, names)} left)`,
    500,
  );
  const ms = Date.now() - began;
  return {
    count: manifests.length,
    seconds: round(ms / 1000, 2),
    resourcesPerSecond: round((manifests.length * 1000) / ms),
    cpu: cpuBetween(cpu0, markCpu(operator.pid, session.controlPlanePids)),
  };
}
