export interface DetailScheduleOptions {
  /** Cloud calls per second that detail fetches may spend, all resources of the kind together. */
  callsPerSecond: number;
  /** Calls one fetch costs. */
  callsPerFetch: number;
  /** How often one resource's details are refreshed at most. */
  intervalMs: number;
  /** Wakes the resource's reconcile when its fetch is due and paid for. */
  enqueue(key: string): void;
}

const TICK_MS = 250;

/**
 * Spends a fixed budget of cloud calls on per-resource details (runtime, metrics, task counts), so their
 * cost is flat whatever the number of resources: with more resources each one is simply refreshed less
 * often. Every resource has the same interval, so due times are in insertion order and a FIFO suffices.
 */
export class DetailSchedule {
  readonly #options: DetailScheduleOptions;
  /** Turns waiting, in due order; a turn whose `ticket` is no longer the key's current one is void. */
  #waiting: Array<{ key: string; dueAt: number; ticket: number }> = [];
  #head = 0;
  /** Tracked keys and the ticket of their one valid turn. */
  readonly #tracked = new Map<string, number>();
  #tickets = 0;
  /** Keys released to their reconcile and not yet fetched. */
  readonly #released = new Set<string>();
  #tokens = 0;
  #lastTick = Date.now();
  #timer: NodeJS.Timeout | undefined;

  constructor(options: DetailScheduleOptions) {
    this.#options = options;
  }

  start(): void {
    this.#lastTick = Date.now();
    this.#timer = setInterval(() => this.#tick(), TICK_MS);
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
  }

  /** Starts refreshing `key` (first fetch as soon as the budget allows); a no-op when already tracked. */
  track(key: string): void {
    if (this.#tracked.has(key)) return;
    this.#enqueueTurn(key, Date.now());
  }

  /** Stops refreshing `key` (deleted, or in a state with nothing to measure). */
  untrack(key: string): void {
    this.#tracked.delete(key);
    this.#released.delete(key);
  }

  /** Whether the reconcile of `key` should fetch details now. */
  isDue(key: string): boolean {
    return this.#released.has(key);
  }

  /** Records a fetch (or its failure) and schedules the next one an interval later. */
  fetched(key: string): void {
    if (!this.#released.delete(key) || !this.#tracked.has(key)) return;
    this.#enqueueTurn(key, Date.now() + this.#options.intervalMs);
  }

  #enqueueTurn(key: string, dueAt: number): void {
    this.#tickets += 1;
    this.#tracked.set(key, this.#tickets);
    this.#waiting.push({ key, dueAt, ticket: this.#tickets });
  }

  #tick(): void {
    const now = Date.now();
    const { callsPerSecond, callsPerFetch } = this.#options;
    // Unused budget does not pile up beyond one second's worth (or one fetch): bursts stay bounded.
    const cap = Math.max(callsPerSecond, callsPerFetch);
    this.#tokens = Math.min(cap, this.#tokens + ((now - this.#lastTick) / 1000) * callsPerSecond);
    this.#lastTick = now;
    while (this.#head < this.#waiting.length && this.#tokens >= callsPerFetch) {
      const next = this.#waiting[this.#head];
      if (!next || next.dueAt > now) break;
      this.#head += 1;
      if (this.#tracked.get(next.key) !== next.ticket) continue;
      this.#tokens -= callsPerFetch;
      this.#released.add(next.key);
      this.#options.enqueue(next.key);
    }
    this.#compact();
  }

  #compact(): void {
    if (this.#head > 1024 && this.#head * 2 > this.#waiting.length) {
      this.#waiting = this.#waiting.slice(this.#head);
      this.#head = 0;
    }
  }
}
