import { IndexedMinHeap } from '../lib/min-heap.ts';
import { defaultControllerRateLimiter, type RateLimiter } from './queue-rate-limiters.ts';

/** The longest delay a Node timer takes (2^31 - 1 ms, about 24.8 days). */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** Hooks for metrics; every method is called synchronously from the queue. */
export interface WorkQueueObserver {
  /** `key` entered the ready queue. */
  added(key: string): void;
  /** `key` left the ready queue for a worker. */
  started(key: string): void;
  /** The worker handling `key` is done. */
  finished(key: string): void;
  /** `key` was put back after a failure. */
  retried(key: string): void;
}

export interface WorkQueueOptions {
  readonly rateLimiter?: RateLimiter;
  readonly observer?: WorkQueueObserver;
}

/**
 * A work queue with client-go's guarantees:
 * - a key waits in the queue at most once, however often it is added;
 * - a key is never handed to two workers at once: added while being processed, it is queued again
 *   when the worker calls `done`;
 * - `addAfter` delays a key (one timer for all delayed keys, driven by a min-heap);
 * - `addRateLimited` delays it by the rate limiter's verdict.
 *
 * Workers loop on `get()` / `done()`. After shutdown, `get()` answers `undefined` and no queued
 * key is handed out any more; work in progress may still finish.
 */
export class WorkQueue {
  readonly #rateLimiter: RateLimiter;
  readonly #observer: WorkQueueObserver | undefined;
  /** Ready keys in FIFO order, from `#head` on; the consumed prefix is trimmed now and then. */
  #ready: string[] = [];
  #head = 0;
  /** Keys that need processing: waiting in `#ready`, or re-added while being processed. */
  readonly #dirty = new Set<string>();
  readonly #processing = new Set<string>();
  readonly #waiting: ((key: string | undefined) => void)[] = [];
  readonly #delayed = new IndexedMinHeap<string>();
  #timer: NodeJS.Timeout | undefined;
  #timerDueAt = Number.POSITIVE_INFINITY;
  #shuttingDown = false;
  readonly #drained: (() => void)[] = [];

  constructor(options: WorkQueueOptions = {}) {
    this.#rateLimiter = options.rateLimiter ?? defaultControllerRateLimiter();
    this.#observer = options.observer;
  }

  /** Keys ready and waiting for a worker. */
  get length(): number {
    return this.#ready.length - this.#head;
  }

  get shuttingDown(): boolean {
    return this.#shuttingDown;
  }

  add(key: string): void {
    if (this.#shuttingDown || this.#dirty.has(key)) return;
    this.#dirty.add(key);
    if (!this.#processing.has(key)) this.#enqueue(key);
  }

  /** Adds `key` once `delayMs` have passed; a key already waiting keeps the earlier of both times. */
  addAfter(key: string, delayMs: number): void {
    if (this.#shuttingDown) return;
    if (delayMs <= 0) {
      this.add(key);
      return;
    }
    const dueAt = Date.now() + delayMs;
    const current = this.#delayed.priorityOf(key);
    if (current !== undefined && current <= dueAt) return;
    this.#delayed.set(key, dueAt);
    this.#armTimer();
  }

  /** Adds `key` after the delay its failure history earns (see `RateLimiter`). */
  addRateLimited(key: string): void {
    if (this.#shuttingDown) return;
    this.#observer?.retried(key);
    this.addAfter(key, this.#rateLimiter.when(key));
  }

  /** `key` succeeded: the rate limiter forgets its failures. */
  forget(key: string): void {
    this.#rateLimiter.forget(key);
  }

  retries(key: string): number {
    return this.#rateLimiter.retries(key);
  }

  /** The next key to process, or `undefined` once the queue shuts down. Call `done(key)` after. */
  get(): Promise<string | undefined> {
    if (this.#shuttingDown) return Promise.resolve(undefined);
    if (this.length > 0) return Promise.resolve(this.#take());
    return new Promise((resolve) => this.#waiting.push(resolve));
  }

  done(key: string): void {
    if (!this.#processing.delete(key)) return;
    this.#observer?.finished(key);
    if (this.#shuttingDown) {
      if (this.#processing.size === 0) this.#notifyDrained();
      return;
    }
    if (this.#dirty.has(key)) this.#enqueue(key);
  }

  /** Stops handing out work at once; delayed and queued keys are dropped. */
  shutdown(): void {
    if (this.#shuttingDown) return;
    this.#shuttingDown = true;
    clearTimeout(this.#timer);
    this.#delayed.clear();
    this.#ready = [];
    this.#head = 0;
    this.#dirty.clear();
    for (const resolve of this.#waiting.splice(0)) resolve(undefined);
  }

  /** Shuts down, then resolves once every key handed out has been marked `done`. */
  shutdownWithDrain(): Promise<void> {
    this.shutdown();
    if (this.#processing.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.#drained.push(resolve));
  }

  #enqueue(key: string): void {
    this.#observer?.added(key);
    this.#ready.push(key);
    this.#waiting.shift()?.(this.#take());
  }

  #take(): string {
    const key = this.#ready[this.#head] as string;
    this.#head++;
    if (this.#head > 1024 && this.#head * 2 > this.#ready.length) {
      this.#ready = this.#ready.slice(this.#head);
      this.#head = 0;
    }
    this.#dirty.delete(key);
    this.#processing.add(key);
    this.#observer?.started(key);
    return key;
  }

  #armTimer(): void {
    const next = this.#delayed.peek();
    if (next === undefined || next.priority === this.#timerDueAt) return;
    clearTimeout(this.#timer);
    this.#timerDueAt = next.priority;
    // A longer delay overflows Node's timer, which then fires after 1 ms: wait the longest it can.
    const delay = Math.min(MAX_TIMER_MS, Math.max(0, next.priority - Date.now()));
    this.#timer = setTimeout(() => this.#releaseDue(), delay);
  }

  #releaseDue(): void {
    this.#timerDueAt = Number.POSITIVE_INFINITY;
    const now = Date.now();
    for (
      let next = this.#delayed.peek();
      next !== undefined && next.priority <= now;
      next = this.#delayed.peek()
    ) {
      this.#delayed.pop();
      this.add(next.key);
    }
    this.#armTimer();
  }

  #notifyDrained(): void {
    for (const resolve of this.#drained.splice(0)) resolve();
  }
}
