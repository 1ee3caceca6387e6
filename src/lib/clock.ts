/**
 * Where the operator reads the time. One clock for every part that compares times (backoffs, time to
 * live, create intents, cache freshness, deadlines), so that tests move it instead of waiting, and the
 * simulator's clock can stand in for it. Timers (the work queue's, leader election's) stay on real time:
 * they wait, they do not compare.
 */
export interface Clock {
  /** Epoch milliseconds. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };
