/** Capped exponential backoff with jitter, for loops that retry after failures. */
export class Backoff {
  readonly #initialMs: number;
  readonly #maxMs: number;
  #nextMs: number;

  constructor(initialMs: number, maxMs: number) {
    this.#initialMs = initialMs;
    this.#maxMs = maxMs;
    this.#nextMs = initialMs;
  }

  /** The delay to wait now; each call doubles the following one up to the cap. */
  next(): number {
    const base = this.#nextMs;
    this.#nextMs = Math.min(this.#nextMs * 2, this.#maxMs);
    // Up to +20% so that many clients failing together do not retry in lockstep.
    return Math.min(base * (1 + Math.random() * 0.2), this.#maxMs);
  }

  reset(): void {
    this.#nextMs = this.#initialMs;
  }
}
