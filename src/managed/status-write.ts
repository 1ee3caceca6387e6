import type { Clock } from '../lib/clock.ts';
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
 * Writes the status: `fields`, the conditions merged into those it has, and the generation observed.
 * Nothing is written when that changes nothing; `lastSyncTime` moves only with a write.
 */
export async function writeStatus(
  { writer, clock }: StatusWriting,
  mr: ManagedObject<unknown>,
  fields: Record<string, unknown>,
  conditions: ConditionInput[],
): Promise<void> {
  const now = new Date(clock.now());
  const current = mr.status;
  const next: ManagedStatus = {
    ...fields,
    observedGeneration: mr.metadata.generation,
    conditions: mergeConditions(current?.conditions, conditions, mr.metadata.generation, now),
    lastSyncTime: current?.lastSyncTime,
  };
  if (!statusChanged(current, next)) return;
  await writer.patchStatus(mr, { ...next, lastSyncTime: now.toISOString() });
}

/** The status as it stands, minus the generic fields `writeStatus` recomputes. */
export function statusAsIs(status: ManagedStatus | undefined): Record<string, unknown> {
  const { observedGeneration: _g, conditions: _c, lastSyncTime: _s, ...rest } = status ?? {};
  return rest;
}
