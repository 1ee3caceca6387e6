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

/**
 * Why a key is added. `new`: an object seen for the first time, when its source says so (the virtual
 * node's Pods). `ongoing`: everything else: a change to an object already handled, a requeue, a change of
 * something it depends on, and every key of a source that does not tell.
 */
export type Arrival = 'new' | 'ongoing';

/**
 * While new keys wait, at most this many ongoing keys are handed out in a row; then one new key is. So a
 * stream of ongoing work delays new objects but never starves them.
 */
export const ONGOING_RUN = 8;

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
 * Unlike client-go's, it has two lanes: ongoing keys go before new ones (at most `ONGOING_RUN` in a
 * row while new ones wait). An object takes several turns to converge, each brought back by the event of
 * the last; first in first out, each of those turns waits behind a burst's every new object. Keys whose
 * adds say nothing go to the ongoing lane, which is then the one first-in-first-out lane.
 *
 * Workers loop on `get()` / `done()`. After shutdown, `get()` answers `undefined` and no queued
 * key is handed out any more; work in progress may still finish.
 */
export class WorkQueue {
  readonly #rateLimiter: RateLimiter;
  readonly #observer: WorkQueueObserver | undefined;
  readonly #ongoing = new Fifo();
  readonly #new = new Fifo();
  /** Ongoing keys handed out in a row while new keys waited. */
  #ongoingRun = 0;
  /** Keys that need processing: waiting in a lane, or re-added while being processed. */
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
    return this.#ongoing.length + this.#new.length;
  }

  get shuttingDown(): boolean {
    return this.#shuttingDown;
  }

  add(key: string, arrival: Arrival = 'ongoing'): void {
    if (this.#shuttingDown || this.#dirty.has(key)) return;
    this.#dirty.add(key);
    if (!this.#processing.has(key)) this.#enqueue(key, arrival);
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
    // Added again while it was handled: whatever the event, the object is no longer new.
    if (this.#dirty.has(key)) this.#enqueue(key, 'ongoing');
  }

  /** Stops handing out work at once; delayed and queued keys are dropped. */
  shutdown(): void {
    if (this.#shuttingDown) return;
    this.#shuttingDown = true;
    clearTimeout(this.#timer);
    this.#delayed.clear();
    this.#ongoing.clear();
    this.#new.clear();
    this.#dirty.clear();
    for (const resolve of this.#waiting.splice(0)) resolve(undefined);
  }

  /** Shuts down, then resolves once every key handed out has been marked `done`. */
  shutdownWithDrain(): Promise<void> {
    this.shutdown();
    if (this.#processing.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.#drained.push(resolve));
  }

  #enqueue(key: string, arrival: Arrival): void {
    this.#observer?.added(key);
    (arrival === 'new' ? this.#new : this.#ongoing).push(key);
    this.#waiting.shift()?.(this.#take());
  }

  #take(): string {
    const newTurn = this.#ongoing.length === 0 || (this.#new.length > 0 && this.#ongoingRun >= ONGOING_RUN);
    this.#ongoingRun = newTurn || this.#new.length === 0 ? 0 : this.#ongoingRun + 1;
    const key = (newTurn ? this.#new : this.#ongoing).shift();
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

/** Keys first in first out, from `#head` on; the consumed prefix is trimmed now and then. */
class Fifo {
  #keys: string[] = [];
  #head = 0;

  get length(): number {
    return this.#keys.length - this.#head;
  }

  push(key: string): void {
    this.#keys.push(key);
  }

  /** The oldest key; only called when `length > 0`. */
  shift(): string {
    const key = this.#keys[this.#head] as string;
    this.#head++;
    if (this.#head > 1024 && this.#head * 2 > this.#keys.length) {
      this.#keys = this.#keys.slice(this.#head);
      this.#head = 0;
    }
    return key;
  }

  clear(): void {
    this.#keys = [];
    this.#head = 0;
  }
}
