interface Entry<K> {
  readonly key: K;
  priority: number;
  /** Insertion order, so that equal priorities come out first-in first-out. */
  seq: number;
}

/** Binary min-heap of unique keys with an index, so a key's priority can be changed in O(log n). */
export class IndexedMinHeap<K> {
  readonly #entries: Entry<K>[] = [];
  readonly #positions = new Map<K, number>();
  #seq = 0;

  get size(): number {
    return this.#entries.length;
  }

  priorityOf(key: K): number | undefined {
    const position = this.#positions.get(key);
    return position === undefined ? undefined : this.#entries[position]?.priority;
  }

  /** Inserts `key`, or moves it to `priority` when already present. */
  set(key: K, priority: number): void {
    const position = this.#positions.get(key);
    if (position === undefined) {
      this.#entries.push({ key, priority, seq: this.#seq++ });
      this.#positions.set(key, this.#entries.length - 1);
      this.#up(this.#entries.length - 1);
      return;
    }
    const entry = this.#at(position);
    const lowered = priority < entry.priority;
    entry.priority = priority;
    if (lowered) this.#up(position);
    else this.#down(position);
  }

  peek(): { key: K; priority: number } | undefined {
    return this.#entries[0];
  }

  pop(): K | undefined {
    const top = this.#entries[0];
    const last = this.#entries.pop();
    if (top === undefined || last === undefined) return undefined;
    this.#positions.delete(top.key);
    if (last !== top) {
      this.#entries[0] = last;
      this.#positions.set(last.key, 0);
      this.#down(0);
    }
    return top.key;
  }

  /** Removes `key`, if present, in O(log n). */
  delete(key: K): boolean {
    const position = this.#positions.get(key);
    if (position === undefined) return false;
    const last = this.#entries.pop() as Entry<K>;
    this.#positions.delete(key);
    if (position < this.#entries.length) {
      this.#entries[position] = last;
      this.#positions.set(last.key, position);
      this.#up(position);
      this.#down(this.#positions.get(last.key) as number);
    }
    return true;
  }

  clear(): void {
    this.#entries.length = 0;
    this.#positions.clear();
  }

  #at(position: number): Entry<K> {
    return this.#entries[position] as Entry<K>;
  }

  #less(a: number, b: number): boolean {
    const x = this.#at(a);
    const y = this.#at(b);
    return x.priority < y.priority || (x.priority === y.priority && x.seq < y.seq);
  }

  #swap(a: number, b: number): void {
    const x = this.#at(a);
    const y = this.#at(b);
    this.#entries[a] = y;
    this.#entries[b] = x;
    this.#positions.set(y.key, a);
    this.#positions.set(x.key, b);
  }

  #up(position: number): void {
    let child = position;
    while (child > 0) {
      const parent = (child - 1) >> 1;
      if (!this.#less(child, parent)) return;
      this.#swap(child, parent);
      child = parent;
    }
  }

  #down(position: number): void {
    let parent = position;
    for (;;) {
      const left = 2 * parent + 1;
      const right = left + 1;
      let smallest = parent;
      if (left < this.#entries.length && this.#less(left, smallest)) smallest = left;
      if (right < this.#entries.length && this.#less(right, smallest)) smallest = right;
      if (smallest === parent) return;
      this.#swap(parent, smallest);
      parent = smallest;
    }
  }
}
