import { randomInt } from 'node:crypto';

/**
 * A seeded pseudo-random stream (mulberry32). Every choice the suite makes — which resource, when to
 * kill, which fault — is drawn from one, so a failing run can be replayed with its printed seed.
 */
export class Random {
  readonly seed: number;
  #state: number;

  constructor(seed: number) {
    this.seed = seed >>> 0;
    this.#state = this.seed;
  }

  /** Uniform in [0, 1). */
  next(): number {
    this.#state = (this.#state + 0x6d2b79f5) >>> 0;
    let t = this.#state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** Uniform in [min, max). */
  between(min: number, max: number): number {
    return min + (max - min) * this.next();
  }

  /** Uniform integer in [min, max]. */
  int(min: number, max: number): number {
    return Math.floor(this.between(min, max + 1));
  }

  chance(probability: number): boolean {
    return this.next() < probability;
  }

  pick<T>(items: readonly T[]): T {
    const item = items[Math.floor(this.next() * items.length)];
    if (item === undefined) throw new RangeError('cannot pick from an empty list');
    return item;
  }

  /**
   * An independent stream for one purpose, derived from this seed and `label`: drawing more in one
   * place never shifts the choices made in another.
   */
  fork(label: string): Random {
    let hash = this.seed ^ 0x811c9dc5;
    for (const char of label) hash = Math.imul(hash ^ char.charCodeAt(0), 0x01000193);
    return new Random(hash >>> 0);
  }
}

/** A fresh seed for a run that was not given one. */
export function freshSeed(): number {
  return randomInt(0, 2 ** 32 - 1);
}
