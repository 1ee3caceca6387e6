/**
 * Token bucket: `burst` tokens, refilled at `ratePerSecond`. Like Go's `rate.Limiter`, a
 * reservation may drive the balance negative, which makes later callers wait their turn.
 */
export class TokenBucket {
  readonly #ratePerMs: number;
  readonly #burst: number;
  readonly #now: () => number;
  #tokens: number;
  #updatedAt: number;

  constructor(ratePerSecond: number, burst: number, now: () => number = Date.now) {
    if (!(ratePerSecond > 0) || !(burst >= 1)) {
      throw new RangeError(
        `token bucket needs a positive rate and a burst of at least 1 (got ${ratePerSecond}, ${burst})`,
      );
    }
    this.#ratePerMs = ratePerSecond / 1000;
    this.#burst = burst;
    this.#now = now;
    this.#tokens = burst;
    this.#updatedAt = now();
  }

  /** Takes a token and returns how many milliseconds to wait before using it (0: right away). */
  reserve(): number {
    this.#refill();
    this.#tokens -= 1;
    return this.#tokens >= 0 ? 0 : -this.#tokens / this.#ratePerMs;
  }

  /** Takes a token only if one is available now. */
  tryTake(): boolean {
    this.#refill();
    if (this.#tokens < 1) return false;
    this.#tokens -= 1;
    return true;
  }

  #refill(): void {
    const now = this.#now();
    this.#tokens = Math.min(this.#burst, this.#tokens + (now - this.#updatedAt) * this.#ratePerMs);
    this.#updatedAt = now;
  }
}
