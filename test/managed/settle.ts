import type { Result } from '../../src/controller/controller.ts';
import { ReconcileError } from '../../src/managed/core/errors.ts';

/** Why a turn failed, as a test names it: the ReconcileError's reason (a terminal one's cause's), else the error's name. */
export function reasonOf(error: Error): string {
  const failure = error.cause instanceof ReconcileError ? error.cause : error;
  return failure instanceof ReconcileError ? failure.reason : failure.name;
}

export interface SettleOptions {
  turns?: number;
  /** Failures the test expects, by reason (see `reasonOf`): any other fails the settle at once. */
  expect?: readonly string[];
  /** A requeue later than this ends the settle, as a resync would be far off. */
  farMs?: number;
}

/**
 * Reconciles a key as the work queue would, until it asks for nothing more soon or the turns run out, and
 * answers the failures met. A failure the test did not name in `expect` is thrown: a test that does not
 * expect one must not pass over it.
 */
export async function settleKey(
  reconcile: () => Promise<Result>,
  { turns = 12, expect = [], farMs = Number.POSITIVE_INFINITY }: SettleOptions = {},
): Promise<{ errors: Error[] }> {
  const errors: Error[] = [];
  for (let turn = 0; turn < turns; turn++) {
    try {
      const result = await reconcile();
      if (!result.requeue && (result.requeueAfterMs === undefined || result.requeueAfterMs > farMs))
        return { errors };
      await new Promise((resolve) => setTimeout(resolve, Math.min(result.requeueAfterMs ?? 0, 40)));
    } catch (error) {
      const failure = error instanceof Error ? error : new Error(String(error));
      if (!expect.includes(reasonOf(failure))) {
        throw new Error(`an unexpected failure while settling: ${reasonOf(failure)}: ${failure.message}`, {
          cause: failure,
        });
      }
      errors.push(failure);
      if (failure.name === 'TerminalError') return { errors };
      await new Promise((resolve) => setTimeout(resolve, 15));
    }
  }
  return { errors };
}
