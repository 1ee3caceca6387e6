// Waiting in tests for what happens in its own time (an apiserver publishing a CRD, a webhook delivered over
// real HTTP, an informer catching up): the one helper for it. Bounded, and it fails with what it saw last.
import { setTimeout as sleep } from 'node:timers/promises';

export interface EventuallyOptions {
  /** How long to keep trying: a bound, not a measurement. */
  readonly timeoutMs?: number;
  /** Which failures of `check` mean "not yet"; any other is thrown at once. Every failure, unless told. */
  readonly retrying?: (error: unknown) => boolean;
}

/** What a check throws for "not yet" when only that is worth another try: `retrying: notYet`. */
export class NotYet extends Error {}

export const notYet = (error: unknown): boolean => error instanceof NotYet;

const FIRST_PAUSE_MS = 5;
const LONGEST_PAUSE_MS = 100;

/**
 * Runs `check` until it returns without throwing, and answers what it returned. Between tries it pauses 5 ms,
 * doubling up to 100 ms, so that what is quick is seen at once and what is slow is not polled hard. Once
 * `timeoutMs` (30 s unless told) has passed it fails with the last failure's message, which names the last
 * state seen when `check` asserts on it, and with that failure as the cause.
 */
export async function eventually<T>(
  check: () => T | Promise<T>,
  { timeoutMs = 30_000, retrying = () => true }: EventuallyOptions = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let pause = FIRST_PAUSE_MS;
  for (let tries = 1; ; tries++) {
    try {
      return await check();
    } catch (error) {
      if (!retrying(error)) throw error;
      if (Date.now() >= deadline) {
        const last = error instanceof Error ? error.message : String(error);
        throw new Error(`gave up after ${timeoutMs} ms (${tries} tries): ${last}`, { cause: error });
      }
    }
    await sleep(Math.min(pause, Math.max(0, deadline - Date.now())));
    pause = Math.min(pause * 2, LONGEST_PAUSE_MS);
  }
}
