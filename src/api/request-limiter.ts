import { performance } from 'node:perf_hooks';
import { TokenBucket } from '../lib/token-bucket.ts';

export interface RateLimit {
  /** Sustained rate the bucket refills at. */
  readonly requestsPerSecond: number;
  /** Tokens the bucket holds: how many requests may go at once after a quiet spell. */
  readonly burst: number;
}

interface Waiter {
  readonly since: number;
  readonly resolve: (waitedMs: number) => void;
  readonly reject: (reason: unknown) => void;
  readonly signal: AbortSignal | undefined;
  readonly onAbort: () => void;
}

/**
 * The request limit shared by every call of one client, so that however many reconcilers use the client,
 * it never sends more than `burst + requestsPerSecond × t` requests in any window of t seconds. Waiters
 * are served first come, first served; one timer wakes the line when the next token is due, so waiting
 * costs nothing while it lasts.
 */
export class RequestLimiter {
  readonly #bucket: TokenBucket;
  readonly #now: () => number;
  readonly #queue: Waiter[] = [];
  #timer: NodeJS.Timeout | undefined;

  constructor(limit: RateLimit, now: () => number = () => performance.now()) {
    this.#bucket = new TokenBucket(limit.requestsPerSecond, limit.burst, now);
    this.#now = now;
  }

  /** Calls waiting for a token right now. */
  get waiting(): number {
    return this.#queue.length;
  }

  /**
   * Takes one token, waiting in line when none is left. Resolves with the milliseconds waited;
   * rejects with the signal's reason if it aborts first (the waiter leaves the line).
   */
  acquire(signal?: AbortSignal): Promise<number> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.#queue.length === 0 && this.#bucket.tryTake()) return Promise.resolve(0);
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        since: this.#now(),
        resolve,
        reject,
        signal,
        onAbort: () => this.#leave(waiter),
      };
      signal?.addEventListener('abort', waiter.onAbort, { once: true });
      this.#queue.push(waiter);
      this.#schedule();
    });
  }

  #schedule(): void {
    if (this.#timer !== undefined || this.#queue.length === 0) return;
    this.#timer = setTimeout(
      () => {
        this.#timer = undefined;
        this.#serve();
      },
      Math.ceil(this.#bucket.msUntil(1)),
    );
  }

  #serve(): void {
    for (
      let waiter = this.#queue[0];
      waiter !== undefined && this.#bucket.tryTake();
      waiter = this.#queue[0]
    ) {
      this.#queue.shift();
      waiter.signal?.removeEventListener('abort', waiter.onAbort);
      waiter.resolve(this.#now() - waiter.since);
    }
    this.#schedule();
  }

  #leave(waiter: Waiter): void {
    const index = this.#queue.indexOf(waiter);
    if (index >= 0) this.#queue.splice(index, 1);
    waiter.reject(waiter.signal?.reason);
  }
}
