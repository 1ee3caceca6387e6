/**
 * The versions of each object this process's own writes were made from, until its cache shows a version
 * it did not write over. A copy among them is stale: its write has landed and the watch has not brought
 * it yet, so anything written from that copy would be refused with a conflict. Versions are only compared
 * for equality, never ordered. Keyed as its user keys objects (a uid, a namespace/name).
 */
export class WrittenOver {
  readonly #versions = new Map<string, Set<string>>();

  /** A write of `key` made from version `from` produced `to`; a write that changed nothing made none. */
  wrote(key: string, from: string | undefined, to: string | undefined): void {
    if (from === undefined || from === to) return;
    this.#versions.set(key, (this.#versions.get(key) ?? new Set()).add(from));
  }

  /** Whether the copy at `version` is stale; a copy that is not passes every write, which is then forgotten. */
  precedes(key: string, version: string | undefined): boolean {
    const over = this.#versions.get(key);
    if (over === undefined || version === undefined) return false;
    if (over.has(version)) return true;
    this.#versions.delete(key);
    return false;
  }

  forget(key: string): void {
    this.#versions.delete(key);
  }

  /** Objects with a write the cache has not passed yet. */
  get size(): number {
    return this.#versions.size;
  }
}
