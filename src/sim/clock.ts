/**
 * Simulated time: wall-clock time plus an offset that only grows. Tests move time forward with
 * `skip` instead of sleeping, and every timestamp the simulator reports stays monotonic.
 */
export class SimClock {
  #offsetMs = 0;

  now(): number {
    return Date.now() + this.#offsetMs;
  }

  skip(ms: number): void {
    if (!Number.isFinite(ms) || ms < 0) throw new RangeError(`cannot skip ${ms} ms: time only moves forward`);
    this.#offsetMs += ms;
  }
}
