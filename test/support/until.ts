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
