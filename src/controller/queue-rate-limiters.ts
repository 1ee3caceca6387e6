import { TokenBucket } from '../lib/token-bucket.ts';

/** Decides how long a key waits before it is retried (client-go's `workqueue.RateLimiter`). */
export interface RateLimiter {
  /** Records a failure of `key` and returns the delay before its retry, in milliseconds. */
  when(key: string): number;
  /** The key succeeded: its failure history is dropped. */
  forget(key: string): void;
  /** Failures recorded for `key` since the last `forget`. */
  retries(key: string): number;
}

/** Per-key delay `baseMs * 2^failures`, capped at `maxMs`. */
export class ItemExponentialFailureRateLimiter implements RateLimiter {
  readonly #baseMs: number;
  readonly #maxMs: number;
  readonly #failures = new Map<string, number>();

  constructor(baseMs: number, maxMs: number) {
    this.#baseMs = baseMs;
    this.#maxMs = maxMs;
  }

  when(key: string): number {
    const failures = this.#failures.get(key) ?? 0;
    this.#failures.set(key, failures + 1);
    // Math.min also tames Infinity once 2^failures overflows.
    return Math.min(this.#baseMs * 2 ** failures, this.#maxMs);
  }

  forget(key: string): void {
    this.#failures.delete(key);
  }

  retries(key: string): number {
    return this.#failures.get(key) ?? 0;
  }
}

/** Overall limit shared by all keys: a token bucket of `qps` with `burst`. */
export class BucketRateLimiter implements RateLimiter {
  readonly #bucket: TokenBucket;

  constructor(qps: number, burst: number, now?: () => number) {
    this.#bucket = new TokenBucket(qps, burst, now);
  }

  when(): number {
    return this.#bucket.reserve();
  }

  forget(): void {}

  retries(): number {
    return 0;
  }
}

/** The longest delay of several limiters, e.g. per-item backoff under an overall budget. */
export class MaxOfRateLimiter implements RateLimiter {
  readonly #limiters: readonly RateLimiter[];

  constructor(...limiters: RateLimiter[]) {
    this.#limiters = limiters;
  }

  when(key: string): number {
    // Every limiter must record the attempt, so no short-circuit here.
    return Math.max(0, ...this.#limiters.map((limiter) => limiter.when(key)));
  }

  forget(key: string): void {
    for (const limiter of this.#limiters) limiter.forget(key);
  }

  retries(key: string): number {
    return Math.max(0, ...this.#limiters.map((limiter) => limiter.retries(key)));
  }
}

/** controller-runtime's default: 5 ms doubling to 1000 s per key, at most 10 retries/s (burst 100) overall. */
export function defaultControllerRateLimiter(): RateLimiter {
  return new MaxOfRateLimiter(
    new ItemExponentialFailureRateLimiter(5, 1_000_000),
    new BucketRateLimiter(10, 100),
  );
}
