import { type DeepReadonly, type KubeObject, keyToString, type ObjectKey } from './object.ts';

/** Maps an object to the values it is filed under in an index (e.g. the Secrets it references). */
export type IndexFunction<T> = (obj: DeepReadonly<T>) => readonly string[];

/** Read access to an informer's cache. Objects are shared, never copied: do not mutate them. */
export interface ObjectStore<T extends KubeObject> {
  readonly size: number;
  get(key: ObjectKey): DeepReadonly<T> | undefined;
  /** By `namespace/name` (or `name` for a cluster-scoped kind). */
  getByKey(key: string): DeepReadonly<T> | undefined;
  values(): IterableIterator<DeepReadonly<T>>;
  /** Maintains an index from now on (existing objects included); names must be unique. */
  addIndex(name: string, indexFunction: IndexFunction<T>): void;
  /** Objects filed under `value` in index `name`. */
  byIndex(name: string, value: string): DeepReadonly<T>[];
}

interface Index<T> {
  readonly indexFunction: IndexFunction<T>;
  readonly keysByValue: Map<string, Set<string>>;
}

/** The informer's cache: objects by key plus optional secondary indexes. Only the informer writes. */
export class ObjectCache<T extends KubeObject> implements ObjectStore<T> {
  #items = new Map<string, DeepReadonly<T>>();
  readonly #indexes = new Map<string, Index<T>>();

  get size(): number {
    return this.#items.size;
  }

  get(key: ObjectKey): DeepReadonly<T> | undefined {
    return this.#items.get(keyToString(key));
  }

  getByKey(key: string): DeepReadonly<T> | undefined {
    return this.#items.get(key);
  }

  values(): IterableIterator<DeepReadonly<T>> {
    return this.#items.values();
  }

  entries(): IterableIterator<[string, DeepReadonly<T>]> {
    return this.#items.entries();
  }

  addIndex(name: string, indexFunction: IndexFunction<T>): void {
    if (this.#indexes.has(name)) throw new Error(`index "${name}" already exists on this store`);
    const index: Index<T> = { indexFunction, keysByValue: new Map() };
    this.#indexes.set(name, index);
    for (const [key, obj] of this.#items) fileUnder(index, key, obj);
  }

  byIndex(name: string, value: string): DeepReadonly<T>[] {
    const index = this.#indexes.get(name);
    if (!index) throw new Error(`no index "${name}" on this store; add it with addIndex first`);
    const found: DeepReadonly<T>[] = [];
    for (const key of index.keysByValue.get(value) ?? []) {
      const obj = this.#items.get(key);
      if (obj) found.push(obj);
    }
    return found;
  }

  /** Stores `obj` under `key` and returns what it replaced. */
  set(key: string, obj: DeepReadonly<T>): DeepReadonly<T> | undefined {
    const previous = this.#items.get(key);
    this.#items.set(key, obj);
    for (const index of this.#indexes.values()) {
      if (previous) unfile(index, key, previous);
      fileUnder(index, key, obj);
    }
    return previous;
  }

  delete(key: string): DeepReadonly<T> | undefined {
    const previous = this.#items.get(key);
    if (!previous) return undefined;
    this.#items.delete(key);
    for (const index of this.#indexes.values()) unfile(index, key, previous);
    return previous;
  }

  /** Swaps in a complete new content (after a relist) and rebuilds the indexes. */
  replace(items: Map<string, DeepReadonly<T>>): void {
    this.#items = items;
    for (const index of this.#indexes.values()) {
      index.keysByValue.clear();
      for (const [key, obj] of items) fileUnder(index, key, obj);
    }
  }
}

/** An index function that throws files the object nowhere rather than corrupting the cache. */
function valuesOf<T>(index: Index<T>, obj: DeepReadonly<T>): readonly string[] {
  try {
    return index.indexFunction(obj);
  } catch {
    return [];
  }
}

function fileUnder<T>(index: Index<T>, key: string, obj: DeepReadonly<T>): void {
  for (const value of valuesOf(index, obj)) {
    let keys = index.keysByValue.get(value);
    if (!keys) {
      keys = new Set();
      index.keysByValue.set(value, keys);
    }
    keys.add(key);
  }
}

function unfile<T>(index: Index<T>, key: string, obj: DeepReadonly<T>): void {
  for (const value of valuesOf(index, obj)) {
    const keys = index.keysByValue.get(value);
    keys?.delete(key);
    if (keys?.size === 0) index.keysByValue.delete(value);
  }
}
