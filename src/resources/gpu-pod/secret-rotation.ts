import type { GpuCloudClient } from '../../api/client.ts';
import type { ActContext, ManagedObject } from '../../managed/external-kind.ts';
import { unlessNotFound } from '../common/cloud.ts';
import type { PodView } from './details.ts';
import type { GpuPodSpec } from './schema.ts';

/**
 * The Secrets whose values the pod no longer carries: a pod keeps the environment it was created with,
 * and the cloud has no call to change it. Compared with the pod's own environment (a get shows it when the
 * view at hand does not), in memory: no value is kept or shown.
 */
export async function rotatedSecrets(
  client: GpuCloudClient,
  mr: ManagedObject<GpuPodSpec>,
  pod: PodView,
  ctx: ActContext,
): Promise<string[]> {
  const fromSecrets = (mr.spec.environmentVars ?? []).filter((item) => item.valueFrom !== undefined);
  if (fromSecrets.length === 0) return [];
  const carried = pod.environmentVars ?? (await unlessNotFound(client.pods.get(pod.id)))?.environmentVars;
  if (!carried) return [];
  const values = new Map(carried.map(({ key, value }) => [key, value]));
  const resolved = await ctx.resolveEnv(fromSecrets);
  const rotated = fromSecrets.flatMap((item, index) =>
    item.valueFrom && values.get(item.key) !== resolved[index]?.value
      ? [item.valueFrom.secretKeyRef.name]
      : [],
  );
  return [...new Set(rotated)].sort();
}
