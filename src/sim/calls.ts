/** Name under which calls that match no operation are counted. */
export const UNROUTED = '(unrouted)';

/** One routed call: which operation, its HTTP method, and the ids in its path. */
export interface CallRecord {
  readonly operation: string;
  readonly method: string;
  readonly params: Readonly<Record<string, string>>;
}

/** The most recent calls kept in the log: enough for a test's story, bounded for a long run. */
const LOG_LIMIT = 20_000;

/**
 * API calls received, per operation name (the measure of "no retry storm"), and a bounded log of the
 * routed ones with their path ids (the proof that nothing touched a given object).
 */
export class CallCounter {
  readonly #counts = new Map<string, number>();
  #log: CallRecord[] = [];

  record(operation: string, call?: Omit<CallRecord, 'operation'>): void {
    this.#counts.set(operation, (this.#counts.get(operation) ?? 0) + 1);
    if (call === undefined) return;
    this.#log.push({ operation, ...call });
    if (this.#log.length > LOG_LIMIT) this.#log = this.#log.slice(-LOG_LIMIT / 2);
  }

  /** The logged calls, oldest first. */
  log(): readonly CallRecord[] {
    return [...this.#log];
  }

  snapshot(): { total: number; byOperation: Record<string, number> } {
    let total = 0;
    for (const value of this.#counts.values()) total += value;
    return {
      total,
      byOperation: Object.fromEntries([...this.#counts].sort(([a], [b]) => a.localeCompare(b))),
    };
  }

  reset(): void {
    this.#counts.clear();
    this.#log = [];
  }
}
