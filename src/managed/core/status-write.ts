import type { Clock } from '../../lib/clock.ts';
import { type ConditionInput, mergeConditions, statusChanged } from './conditions.ts';
import type { ManagedObject } from './external-kind.ts';
import type { ManagedStatus } from './status-schema.ts';
import type { ManagedWriter } from './writer.ts';

/** What a status write needs: the writer, and the clock its timestamps come from. */
export interface StatusWriting {
  writer: ManagedWriter;
  clock: Clock;
}

/**
 * Writes the status: `fields`, the conditions merged into those it has, and the generation observed, on
 * the version `mr` was read at (a conflict when it is stale). Nothing is written when that changes
 * nothing; `lastSyncTime` moves only with a write. Answers `mr` as written, for the turn's next write.
 */
export async function writeStatus<T>(
  { writer, clock }: StatusWriting,
  mr: ManagedObject<T>,
  fields: Record<string, unknown>,
  conditions: ConditionInput[],
): Promise<ManagedObject<T>> {
  const now = new Date(clock.now());
  const current = mr.status;
  const next: ManagedStatus = {
    ...fields,
    observedGeneration: mr.metadata.generation,
    conditions: mergeConditions(current?.conditions, conditions, mr.metadata.generation, now),
    lastSyncTime: current?.lastSyncTime,
  };
  if (!statusChanged(current, next)) return mr;
  const status = { ...next, lastSyncTime: now.toISOString() };
  const resourceVersion = await writer.patchStatus(mr, status);
  return { ...mr, metadata: { ...mr.metadata, resourceVersion }, status };
}

/** The status as it stands, minus the generic fields `writeStatus` recomputes. */
export function statusAsIs(status: ManagedStatus | undefined): Record<string, unknown> {
  const { observedGeneration: _g, conditions: _c, lastSyncTime: _s, ...rest } = status ?? {};
  return rest;
}
