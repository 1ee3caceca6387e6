// The cumulative CPU time a kubelet reports (usageCoreNanoSeconds, container_cpu_usage_seconds_total),
// which the cloud does not keep: it gives a usage rate per sample. Each read advances a counter by the
// latest rate over the time since the last read, so the counter only grows and the rate a reader takes
// between two reads is the latest sample's. A counter first seen is started as if its rate had held since
// the container started. Kept in memory: a new leader starts them again (a reader sees one reset).

interface Counter {
  nanoSeconds: number;
  at: number;
}

export class CpuCounters {
  readonly #counters = new Map<string, Counter>();

  /** The counter `id` at `now`, advanced at `nanoCores` since its last read; started at `startedAt`. */
  read(id: string, nanoCores: number, startedAt: number, now: number): number {
    const counter = this.#counters.get(id) ?? { nanoSeconds: 0, at: Math.min(startedAt, now) };
    counter.nanoSeconds += (nanoCores * Math.max(0, now - counter.at)) / 1000;
    counter.at = Math.max(counter.at, now);
    this.#counters.set(id, counter);
    return Math.round(counter.nanoSeconds);
  }

  /** Forgets every counter but those of `ids`: the containers that are gone. */
  keepOnly(ids: ReadonlySet<string>): void {
    for (const id of this.#counters.keys()) if (!ids.has(id)) this.#counters.delete(id);
  }
}
