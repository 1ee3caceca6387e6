import type { SimClock } from './clock.ts';

export interface Cancellable {
  cancel(): void;
}

interface Entry {
  readonly due: number;
  readonly seq: number;
  readonly run: () => void;
  cancelled: boolean;
}

/** Longest delay setTimeout accepts; longer waits simply re-arm. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * Every delayed action of the simulator (state transitions, retries, retention) goes through one
 * min-heap and one timer, so ten thousand pods cost ten thousand heap entries, not timers.
 * Cancelled entries stay in the heap and are skipped when they come due.
 */
export class Scheduler {
  readonly #clock: SimClock;
  readonly #onError: (error: unknown) => void;
  readonly #heap: Entry[] = [];
  #seq = 0;
  #timer: NodeJS.Timeout | undefined;
  #timerDue = Number.POSITIVE_INFINITY;
  #stopped = false;

  constructor(clock: SimClock, onError: (error: unknown) => void) {
    this.#clock = clock;
    this.#onError = onError;
  }

  /** Runs `run` after `delayMs` of simulated time. */
  after(delayMs: number, run: () => void): Cancellable {
    if (this.#stopped) return { cancel() {} };
    const entry: Entry = { due: this.#clock.now() + delayMs, seq: this.#seq++, run, cancelled: false };
    this.#push(entry);
    this.#arm();
    return {
      cancel() {
        entry.cancelled = true;
      },
    };
  }

  /**
   * Moves simulated time forward by `ms`, running each action that falls due at its own instant,
   * so that what it records (a status change, the start of billing) carries the right time.
   */
  advance(ms: number): void {
    this.#advanceTo(this.#clock.now() + ms);
  }

  /** Runs every action due by `target`, in due order (actions they schedule too, if due). */
  #advanceTo(target: number): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#timerDue = Number.POSITIVE_INFINITY;
    for (let top = this.#heap[0]; top !== undefined && top.due <= target; top = this.#heap[0]) {
      this.#pop();
      if (top.cancelled) continue;
      this.#clock.skip(Math.max(0, top.due - this.#clock.now()));
      try {
        top.run();
      } catch (error) {
        this.#onError(error);
      }
    }
    this.#clock.skip(Math.max(0, target - this.#clock.now()));
    // An action run above may have armed a timer from the clock as it stood mid-advance: arm afresh.
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#timerDue = Number.POSITIVE_INFINITY;
    this.#arm();
  }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#heap.length = 0;
  }

  #arm(): void {
    const top = this.#heap[0];
    if (this.#stopped || this.#clock.manual || top === undefined || top.due >= this.#timerDue) return;
    clearTimeout(this.#timer);
    this.#timerDue = top.due;
    const delay = Math.min(MAX_TIMER_MS, Math.max(0, top.due - this.#clock.now()));
    this.#timer = setTimeout(() => this.#advanceTo(this.#clock.now()), delay);
  }

  #before(a: Entry, b: Entry): boolean {
    return a.due < b.due || (a.due === b.due && a.seq < b.seq);
  }

  #push(entry: Entry): void {
    const heap = this.#heap;
    heap.push(entry);
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const above = heap[parent] as Entry;
      if (!this.#before(entry, above)) break;
      heap[i] = above;
      i = parent;
    }
    heap[i] = entry;
  }

  #pop(): void {
    const heap = this.#heap;
    const last = heap.pop();
    if (last === undefined || heap.length === 0) return;
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= heap.length) break;
      const right = left + 1;
      const leftEntry = heap[left] as Entry;
      const rightEntry = heap[right];
      const child = rightEntry !== undefined && this.#before(rightEntry, leftEntry) ? right : left;
      const childEntry = heap[child] as Entry;
      if (!this.#before(childEntry, last)) break;
      heap[i] = childEntry;
      i = child;
    }
    heap[i] = last;
  }
}
