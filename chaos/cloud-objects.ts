import { OWNER_ENV } from '../src/managed/core/annotations.ts';
import type { RunningSimulator, SimState } from '../src/sim/index.ts';
import type { Ledger, Tracked } from './ledger.ts';
import type { KindName } from './workload.ts';

/** One object of the simulated cloud, in the terms the suite checks: whose is it, and is it still billed? */
export interface CloudObject {
  readonly kind: KindName;
  readonly id: string;
  readonly name: string;
  readonly status: string;
  /** Not deleted nor on its way out: it costs money. */
  readonly live: boolean;
  /** The custom resource uid in the owner marker (pods and endpoints; a VM has no environment). */
  readonly marker: string | undefined;
  /** Endpoints only. */
  readonly totalWorkers?: number;
}

const GONE = new Set(['TERMINATING', 'TERMINATED']);

export function cloudObjects(state: SimState): CloudObject[] {
  return [
    ...state.pods.map((pod) => ({
      kind: 'GpuPod' as const,
      id: pod.id,
      name: pod.name,
      status: pod.status,
      live: !GONE.has(pod.status),
      marker: pod.environment[OWNER_ENV],
    })),
    ...state.vms.map((vm) => ({
      kind: 'GpuVm' as const,
      id: vm.id,
      name: vm.name,
      status: vm.status,
      live: !GONE.has(vm.status),
      marker: undefined,
    })),
    // A deleted endpoint vanishes from the cloud at once.
    ...state.endpoints.map((endpoint) => ({
      kind: 'ServerlessEndpoint' as const,
      id: endpoint.id,
      name: endpoint.name,
      status: endpoint.status,
      live: true,
      marker: endpoint.environment[OWNER_ENV],
      totalWorkers: endpoint.totalWorkers,
    })),
  ];
}

/** The resource a cloud object was made for: by its owner marker, or a VM by its name. */
export function ownerOf(object: CloudObject, ledger: Ledger): Tracked | undefined {
  const owner = object.marker === undefined ? ledger.byVmName(object.name) : ledger.byUid(object.marker);
  return owner?.kind === object.kind ? owner : undefined;
}

/**
 * Every cloud object that existed at any of its samples. Endpoints vanish when deleted, so a
 * duplicate made and deleted between two final looks would otherwise go unseen.
 */
export class CloudHistory {
  readonly #sim: RunningSimulator;
  readonly #ledger: Ledger;
  /** Object key → uid of the resource it was made for (undefined: nobody's). */
  readonly #owners = new Map<string, string | undefined>();
  /** Object key → the first and last sample in which it was live. */
  readonly #lives = new Map<string, { first: number; last: number }>();
  #samples = 0;
  #timer: NodeJS.Timeout | undefined;

  constructor(sim: RunningSimulator, ledger: Ledger) {
    this.#sim = sim;
    this.#ledger = ledger;
  }

  start(intervalMs: number): void {
    this.#timer = setInterval(() => this.sample(), intervalMs);
  }

  stop(): void {
    clearInterval(this.#timer);
    this.sample();
  }

  sample(): void {
    const sample = this.#samples++;
    for (const object of cloudObjects(this.#sim.state.snapshot())) {
      const key = `${object.kind}/${object.id}`;
      // An owner unknown at first sight is looked for again: the suite may learn of a resource after its
      // object (the virtual-node scenario finds the GpuPods the node makes by listing them).
      if (this.#owners.get(key) === undefined) this.#owners.set(key, ownerOf(object, this.#ledger)?.uid);
      if (!object.live) continue;
      const life = this.#lives.get(key);
      if (life) life.last = sample;
      else this.#lives.set(key, { first: sample, last: sample });
    }
  }

  /**
   * How many cloud objects of each resource, by uid, were seen live while another of it still was: what a
   * replacement must never be (recovery deletes a preempted object before it creates the next one).
   */
  overlapsPerResource(): Map<string, number> {
    const lives = new Map<string, Array<{ first: number; last: number }>>();
    for (const [key, uid] of this.#owners) {
      const life = this.#lives.get(key);
      if (uid === undefined || !life) continue;
      lives.set(uid, [...(lives.get(uid) ?? []), life]);
    }
    const overlaps = new Map<string, number>();
    for (const [uid, spans] of lives) {
      const sorted = spans.toSorted((a, b) => a.first - b.first);
      const count = sorted.filter((span, i) => sorted.slice(0, i).some((before) => span.first <= before.last)).length;
      if (count > 0) overlaps.set(uid, count);
    }
    return overlaps;
  }

  /** How many cloud objects were ever made for each resource, by uid. */
  madePerResource(): Map<string, number> {
    const counts = new Map<string, number>();
    for (const uid of this.#owners.values()) {
      if (uid !== undefined) counts.set(uid, (counts.get(uid) ?? 0) + 1);
    }
    return counts;
  }

  get size(): number {
    return this.#owners.size;
  }
}
