import { eventually, NotYet, notYet } from './eventually.ts';

/**
 * Polls `condition` until it holds; fails naming `what` after `timeoutMs` (a bound, not a measurement).
 * `eventually` for a condition that answers true or false rather than asserting; one that throws fails at once.
 */
export async function until(
  condition: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 30_000,
): Promise<void> {
  await eventually(
    async () => {
      if (!(await condition())) throw new NotYet(`waiting for ${what}`);
    },
    { timeoutMs, retrying: notYet },
  );
}

/**
 * Reads until `check` passes on what was read, and answers it; fails naming `what` and the last value read.
 * `eventually` for a check that answers true or false rather than asserting; a read that throws fails at once.
 */
export function poll<T>(
  read: () => Promise<T>,
  check: (value: T) => boolean,
  what: string,
  timeoutMs = 30_000,
): Promise<T> {
  return eventually(
    async () => {
      const last = await read();
      if (!check(last)) throw new NotYet(`waiting for ${what}; last seen: ${JSON.stringify(last)}`);
      return last;
    },
    { timeoutMs, retrying: notYet },
  );
}
