/**
 * Simulated time: by default wall-clock time plus an offset that only grows; with `manual` it
 * stands still until skipped forward. Tests move time with `skip` instead of sleeping, and every
 * timestamp the simulator reports stays monotonic.
 */
export class SimClock {
  /** True when time moves only by `skip`; then no real timer needs to wait for it. */
  readonly manual: boolean;
  readonly #origin: number;
  #offsetMs = 0;

  constructor(manual = false) {
    this.manual = manual;
    this.#origin = Date.now();
  }

  now(): number {
    return (this.manual ? this.#origin : Date.now()) + this.#offsetMs;
  }

  skip(ms: number): void {
    if (!Number.isFinite(ms) || ms < 0) throw new RangeError(`cannot skip ${ms} ms: time only moves forward`);
    this.#offsetMs += ms;
  }
}
