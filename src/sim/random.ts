/**
 * Seeded pseudo-random numbers (mulberry32), so a chaos run with a given seed makes the same fault
 * decisions in the same order.
 */
export class Random {
  #state: number;

  constructor(seed: number) {
    this.#state = seed >>> 0;
  }

  /** A number in [0, 1). */
  next(): number {
    this.#state = (this.#state + 0x6d2b79f5) >>> 0;
    let t = this.#state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** True with the given probability. */
  chance(probability: number): boolean {
    return probability > 0 && this.next() < probability;
  }
}

/** A stable value in [0, 1) for a tuple of inputs: synthetic metrics use it so a series never changes. */
export function hashUnit(...parts: Array<string | number>): number {
  let h = 2166136261;
  for (const char of parts.join('|')) {
    h ^= char.charCodeAt(0);
    h = Math.imul(h, 16777619);
  }
  h ^= h >>> 13;
  h = Math.imul(h, 0x5bd1e995);
  h ^= h >>> 15;
  return (h >>> 0) / 4294967296;
}
