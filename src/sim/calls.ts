/** Name under which calls that match no operation are counted. */
export const UNROUTED = '(unrouted)';

/** API calls received, per operation name: the measure of "no retry storm". */
export class CallCounter {
  readonly #counts = new Map<string, number>();

  record(operation: string): void {
    this.#counts.set(operation, (this.#counts.get(operation) ?? 0) + 1);
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
  }
}
