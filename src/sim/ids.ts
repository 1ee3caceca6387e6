/**
 * Cloud ids: decimal numbers, unique and increasing, shared by every kind so that a pod id can
 * never be mistaken for a VM id. Held as strings, the application form of every cloud id.
 */
export class IdSequence {
  #next: number;

  constructor(first = 10_000_001) {
    this.#next = first;
  }

  next(): string {
    return String(this.#next++);
  }
}
