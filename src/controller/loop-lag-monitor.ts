/**
 * Measures how long the event loop stays blocked, with a ticker: each tick notes how late it ran.
 * A block that is still unaccounted for (the ticker has not run since) is included by reading the
 * time since the last tick, so a probe right after a block sees it.
 */
export class EventLoopMonitor {
  readonly #intervalMs: number;
  #timer: NodeJS.Timeout | undefined;
  #lastTick = 0;
  #worstMs = 0;

  constructor(intervalMs: number) {
    this.#intervalMs = intervalMs;
  }

  start(): void {
    if (this.#timer) return;
    this.#lastTick = performance.now();
    this.#timer = setInterval(() => {
      this.#worstMs = Math.max(this.#worstMs, this.#pendingDelayMs());
      this.#lastTick = performance.now();
    }, this.#intervalMs);
    // Measuring must not keep the process alive.
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /** The longest delay since the previous call (or `start`); measurement restarts. */
  takeWorstDelayMs(): number {
    const worst = Math.max(this.#worstMs, this.#pendingDelayMs());
    this.#worstMs = 0;
    return worst;
  }

  #pendingDelayMs(): number {
    return Math.max(0, performance.now() - this.#lastTick - this.#intervalMs);
  }
}
