import type { Clock } from '../../lib/clock.ts';
import { IndexedMinHeap } from '../../lib/min-heap.ts';
import { TokenBucket } from '../../lib/token-bucket.ts';

export interface DetailScheduleOptions {
  /** Cloud calls per second that detail fetches may spend, all resources of the kind together. */
  callsPerSecond: number;
  /** Calls one fetch costs. */
  callsPerFetch: number;
  /** How often one resource's details are refreshed at most. */
  intervalMs: number;
  /** Wakes the resource's reconcile when its fetch is due and paid for. */
  enqueue(key: string): void;
  clock: Clock;
}

const TICK_MS = 250;

/**
 * Spends a fixed budget of cloud calls on per-resource details (runtime, metrics, task counts), so their
 * cost is flat whatever the number of resources: with more resources each one is simply refreshed less
 * often. Turns wait in a heap by due time: a resource tracked now is due before one fetched a moment ago,
 * so a FIFO would make new resources wait a whole interval behind it.
 */
export class DetailSchedule {
  readonly #options: DetailScheduleOptions;
  /** Due times of tracked keys. */
  readonly #turns = new IndexedMinHeap<string>();
  readonly #tracked = new Set<string>();
  /** Keys released to their reconcile and not yet fetched. */
  readonly #released = new Set<string>();
  /** What the last fetch of each tracked key returned. */
  readonly #last = new Map<string, Record<string, unknown>>();
  readonly #budget: TokenBucket;
  #timer: NodeJS.Timeout | undefined;

  constructor(options: DetailScheduleOptions) {
    this.#options = options;
    // Unused budget does not pile up beyond one second's worth (or one fetch): bursts stay bounded.
    const cap = Math.max(options.callsPerSecond, options.callsPerFetch);
    this.#budget = new TokenBucket(options.callsPerSecond, cap, () => options.clock.now(), 0);
  }

  start(): void {
    this.#timer = setInterval(() => this.#tick(), TICK_MS);
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
  }

  /**
   * Starts refreshing `key`; a no-op when already tracked. The first fetch comes as soon as the budget
   * allows, or, when details are `known` already (a restarted operator finds them in status), at a
   * random point of the interval: a restart then spends the budget as steadily as any other minute.
   */
  track(key: string, known = false): void {
    if (this.#tracked.has(key)) return;
    this.#tracked.add(key);
    this.#turns.set(key, this.#options.clock.now() + (known ? Math.random() * this.#options.intervalMs : 0));
  }

  /** Stops refreshing `key` (deleted, or in a state with nothing to measure). */
  untrack(key: string): void {
    this.#tracked.delete(key);
    this.#turns.delete(key);
    this.#released.delete(key);
    this.#last.delete(key);
  }

  /** The details the last fetch of `key` returned, while it is tracked. */
  last(key: string): Record<string, unknown> | undefined {
    return this.#last.get(key);
  }

  /** Keys it holds anything for: the tracked ones, once untracked keys are let go. */
  get size(): number {
    return Math.max(this.#tracked.size, this.#turns.size, this.#last.size, this.#released.size);
  }

  /** Whether the reconcile of `key` should fetch details now. */
  isDue(key: string): boolean {
    return this.#released.has(key);
  }

  /**
   * Records a fetch and what it returned (`undefined`: it failed, the last values stand), and schedules
   * the next one an interval later.
   */
  fetched(key: string, values: Record<string, unknown> | undefined): void {
    if (!this.#released.delete(key) || !this.#tracked.has(key)) return;
    if (values !== undefined) this.#last.set(key, values);
    this.#turns.set(key, this.#options.clock.now() + this.#options.intervalMs);
  }

  #tick(): void {
    const now = this.#options.clock.now();
    const { callsPerFetch } = this.#options;
    while (this.#budget.msUntil(callsPerFetch) === 0) {
      const next = this.#turns.peek();
      if (!next || next.priority > now) break;
      this.#turns.pop();
      if (!this.#tracked.has(next.key)) continue;
      this.#budget.tryTake(callsPerFetch);
      this.#released.add(next.key);
      this.#options.enqueue(next.key);
    }
  }
}
