import type { Logger } from 'pino';
import type { Result } from '../../controller/controller.ts';
import type { Clock } from '../../lib/clock.ts';
import { isDeletionProtected } from '../core/annotations.ts';
import { type CommonSpec, type ManagedObject, OUTCOMES } from '../core/external-kind.ts';
import { logResource } from '../core/resource-log.ts';
import type { ManagedStatus } from '../core/status-schema.ts';
import type { ManagedWriter } from '../core/writer.ts';

/** When the status says the object finished (a Complete or Failed condition), in epoch ms. */
export function finishedAt(status: ManagedStatus | undefined, now: number): number | undefined {
  const done = status?.conditions?.some(
    (condition) => condition.status === 'True' && OUTCOMES.some((type) => type === condition.type),
  );
  if (!done) return undefined;
  const at = Date.parse(String(status?.completionTime ?? ''));
  return Number.isNaN(at) ? now : at;
}

/** A finished resource past its `ttlSecondsAfterFinished` is deleted; until then, looked at when it is. */
export async function expireFinished(
  { writer, log, clock }: { writer: ManagedWriter; log: Logger; clock: Clock },
  mr: ManagedObject<CommonSpec>,
  finished: number,
): Promise<Result> {
  const ttl = mr.spec.ttlSecondsAfterFinished;
  if (ttl === undefined) return {};
  const left = finished + ttl * 1000 - clock.now();
  if (left > 0) return { requeueAfterMs: left };
  // Its user protected it: kept past its time to live, as a delete of theirs would be refused too.
  if (isDeletionProtected(mr)) return {};
  await writer.deleteObject(mr);
  logResource(log, 'info', mr, {}, `deleted: finished more than ttlSecondsAfterFinished (${ttl} s) ago`);
  return {};
}
