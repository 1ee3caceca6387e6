/**
 * Token bucket: up to `burst` tokens, refilled at `ratePerSecond`, holding `initial` at first (full by
 * default). Like Go's `rate.Limiter`, a reservation may drive the balance negative, which makes later
 * callers wait their turn. The one bucket every limiter of the project is built on: the work queue's
 * overall limit, the Event recorder's per-object spam filter, the cloud client's request limit and the
 * details budget.
 */
export class TokenBucket {
  readonly #ratePerMs: number;
  readonly #burst: number;
  readonly #now: () => number;
  #tokens: number;
  #updatedAt: number;

  constructor(ratePerSecond: number, burst: number, now: () => number = Date.now, initial = burst) {
    if (!(ratePerSecond > 0) || !(burst >= 1)) {
      throw new RangeError(
        `token bucket needs a positive rate and a burst of at least 1 (got ${ratePerSecond}, ${burst})`,
      );
    }
    this.#ratePerMs = ratePerSecond / 1000;
    this.#burst = burst;
    this.#now = now;
    this.#tokens = Math.min(initial, burst);
    this.#updatedAt = now();
  }

  /** Takes a token and returns how many milliseconds to wait before using it (0: right away). */
  reserve(): number {
    this.#refill();
    this.#tokens -= 1;
    return this.#tokens >= 0 ? 0 : -this.#tokens / this.#ratePerMs;
  }

  /** Takes `count` tokens only if they are all available now. */
  tryTake(count = 1): boolean {
    this.#refill();
    if (this.#tokens < count) return false;
    this.#tokens -= count;
    return true;
  }

  /** Milliseconds until `count` tokens are available (0: now). */
  msUntil(count = 1): number {
    this.#refill();
    return Math.max(0, (count - this.#tokens) / this.#ratePerMs);
  }

  #refill(): void {
    const now = this.#now();
    this.#tokens = Math.min(this.#burst, this.#tokens + (now - this.#updatedAt) * this.#ratePerMs);
    this.#updatedAt = now;
  }
}
