import type { Clock } from '../../src/lib/clock.ts';

/**
 * A clock a test moves forward instead of waiting. By default it stands still between moves, so a test
 * can assert exact delays; `flowing` keeps it on the wall clock plus the moves, for worlds whose parts
 * also schedule real timers (the cloud cache's lists) and must see time pass between them.
 */
export class MovableClock implements Clock {
  readonly #origin: number;
  readonly #flowing: boolean;
  #offsetMs = 0;

  /** `at`: where a standing clock starts (epoch ms); now by default. */
  constructor(options: { flowing?: boolean; at?: number } = {}) {
    this.#flowing = options.flowing ?? false;
    this.#origin = options.at ?? Date.now();
  }

  now(): number {
    return (this.#flowing ? Date.now() : this.#origin) + this.#offsetMs;
  }

  advance(ms: number): void {
    if (!(ms >= 0)) throw new RangeError(`cannot move the clock by ${ms} ms: time only moves forward`);
    this.#offsetMs += ms;
  }
}
