import { cloudNameOf, type KindName, type Spec } from './workload.ts';

/** What the suite knows of one custom resource it made: the truth the operator's work is checked against. */
export interface Tracked {
  readonly kind: KindName;
  readonly name: string;
  readonly uid: string;
  /** The spec as last written by the suite. */
  spec: Spec;
  /** `metadata.generation` after the suite's last write. */
  generation: number;
  /** A delete was accepted by the apiserver. */
  deleted: boolean;
  /**
   * The cloud will refuse this spec: the resource must end with a terminal `Synced=False` and no cloud
   * object, never a retry loop.
   */
  readonly rejected: boolean;
  /** Every cloud name the resource has asked for: a renamed VM is still its own. */
  readonly cloudNames: Set<string>;
  /** When the suite's last change was accepted (epoch ms). */
  changedAt: number;
  /** When the resource was first seen converged after that change. */
  convergedAt: number | undefined;
}

/** What the apiserver answered to a create or patch, as far as the ledger needs it. */
export interface Written {
  readonly metadata: { readonly uid: string; readonly generation?: number | undefined };
  readonly spec?: Spec | undefined;
}

const keyOf = (kind: KindName, name: string) => `${kind}/${name}`;

/** One change of one resource, and when the operator had carried it out. */
export interface Settlement {
  readonly tracked: Tracked;
  readonly changedAt: number;
  readonly convergedAt: number;
}

/** Every custom resource one scenario made, and what became of it. */
export class Ledger {
  /** Every change seen converged, in the order they were. */
  readonly settlements: Settlement[] = [];
  readonly #byKey = new Map<string, Tracked>();
  readonly #byUid = new Map<string, Tracked>();
  readonly #byVmName = new Map<string, Tracked>();

  created(kind: KindName, name: string, written: Written, rejected = false): Tracked {
    const spec = written.spec ?? {};
    const tracked: Tracked = {
      kind,
      name,
      uid: written.metadata.uid,
      spec,
      generation: written.metadata.generation ?? 1,
      deleted: false,
      rejected,
      cloudNames: new Set(),
      changedAt: Date.now(),
      convergedAt: undefined,
    };
    this.#byKey.set(keyOf(kind, name), tracked);
    this.#byUid.set(tracked.uid, tracked);
    this.#addCloudName(tracked);
    return tracked;
  }

  changed(tracked: Tracked, written: Written): void {
    tracked.spec = written.spec ?? tracked.spec;
    tracked.generation = written.metadata.generation ?? tracked.generation;
    this.#touch(tracked);
    this.#addCloudName(tracked);
  }

  deleted(tracked: Tracked): void {
    tracked.deleted = true;
    this.#touch(tracked);
  }

  /** The resource was seen converged at `at`, for the first time since its last change. */
  converged(tracked: Tracked, at: number): void {
    tracked.convergedAt = at;
    this.settlements.push({ tracked, changedAt: tracked.changedAt, convergedAt: at });
  }

  get(kind: KindName, name: string): Tracked | undefined {
    return this.#byKey.get(keyOf(kind, name));
  }

  byUid(uid: string): Tracked | undefined {
    return this.#byUid.get(uid);
  }

  /** The VM resource that asked for this cloud name (VMs carry no owner marker; names are unique here). */
  byVmName(name: string): Tracked | undefined {
    return this.#byVmName.get(name);
  }

  all(): Tracked[] {
    return [...this.#byKey.values()];
  }

  live(): Tracked[] {
    return this.all().filter((tracked) => !tracked.deleted);
  }

  #touch(tracked: Tracked): void {
    tracked.changedAt = Date.now();
    tracked.convergedAt = undefined;
  }

  #addCloudName(tracked: Tracked): void {
    const cloudName = cloudNameOf(tracked.name, tracked.spec);
    tracked.cloudNames.add(cloudName);
    if (tracked.kind === 'GpuVm') this.#byVmName.set(cloudName, tracked);
  }
}
