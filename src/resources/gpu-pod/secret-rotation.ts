import type { GpuCloudClient } from '../../api/client.ts';
import type { ActContext, ManagedObject } from '../../managed/core/external-kind.ts';
import { SECRET_ROTATED } from '../../managed/reporting/status-report.ts';
import { unlessNotFound } from '../common/cloud.ts';
import type { PodView } from './details.ts';
import type { GpuPodSpec } from './schema.ts';

/**
 * The Secrets whose values the pod no longer carries: a pod keeps the environment it was created with,
 * and the cloud has no call to change it. Compared with the pod's own environment, in memory: no value is
 * kept or shown. The view at hand may lack the environment (the list's, trusted with the status after a
 * restart): a get is spent only when a Secret changed since the last reconcile, or a rotation is being
 * reported, so a restart still costs lists, not a get per pod.
 */
export async function rotatedSecrets(
  client: GpuCloudClient,
  mr: ManagedObject<GpuPodSpec>,
  pod: PodView,
  ctx: ActContext,
): Promise<string[]> {
  const fromSecrets = (mr.spec.environmentVars ?? []).filter((item) => item.valueFrom !== undefined);
  if (fromSecrets.length === 0) return [];
  const resolved = await ctx.resolveEnv(fromSecrets);
  const look = ctx.secretsChanged() || reported(mr);
  const carried =
    pod.environmentVars ??
    (look ? (await unlessNotFound(client.pods.get(pod.id)))?.environmentVars : undefined);
  if (!carried) return [];
  const values = new Map(carried.map(({ key, value }) => [key, value]));
  const rotated = fromSecrets.flatMap((item, index) =>
    item.valueFrom && values.get(item.key) !== resolved[index]?.value
      ? [item.valueFrom.secretKeyRef.name]
      : [],
  );
  return [...new Set(rotated)].sort();
}

/** Whether the pod's status reports a rotation already: it goes on being compared until it is over. */
function reported(mr: ManagedObject<GpuPodSpec>): boolean {
  return (
    mr.status?.conditions?.some(
      (condition) => condition.type === 'Synced' && condition.reason === SECRET_ROTATED,
    ) === true
  );
}
