export interface Stored<S extends string = string> {
  readonly id: string;
  readonly org: string;
  status: S;
}

/**
 * The resources of one kind, indexed by id, by organisation (in creation order, which is id order)
 * and by status, so that lists cost O(resources of the caller) and fault sweeps O(resources in the
 * swept status). Status changes go through `setStatus` to keep the index true.
 */
export class Store<S extends string, R extends Stored<S>> {
  readonly #byId = new Map<string, R>();
  readonly #byOrg = new Map<string, Map<string, R>>();
  readonly #byStatus = new Map<S, Set<R>>();

  add(resource: R): void {
    this.#byId.set(resource.id, resource);
    let org = this.#byOrg.get(resource.org);
    if (org === undefined) {
      org = new Map();
      this.#byOrg.set(resource.org, org);
    }
    org.set(resource.id, resource);
    this.#statusSet(resource.status).add(resource);
  }

  /** The resource with this id if it belongs to `org`: another organisation's reads as absent. */
  get(org: string, id: string): R | undefined {
    const resource = this.#byId.get(id);
    return resource?.org === org ? resource : undefined;
  }

  /** Lookup regardless of organisation, for the simulator's own controls. */
  find(id: string): R | undefined {
    return this.#byId.get(id);
  }

  remove(resource: R): void {
    this.#byId.delete(resource.id);
    this.#byOrg.get(resource.org)?.delete(resource.id);
    this.#byStatus.get(resource.status)?.delete(resource);
  }

  has(resource: R): boolean {
    return this.#byId.get(resource.id) === resource;
  }

  setStatus(resource: R, status: S): void {
    if (resource.status === status) return;
    if (this.has(resource)) {
      this.#byStatus.get(resource.status)?.delete(resource);
      this.#statusSet(status).add(resource);
    }
    resource.status = status;
  }

  inOrg(org: string): Iterable<R> {
    return this.#byOrg.get(org)?.values() ?? [];
  }

  withStatus(status: S): Iterable<R> {
    return this.#byStatus.get(status) ?? [];
  }

  all(): Iterable<R> {
    return this.#byId.values();
  }

  get size(): number {
    return this.#byId.size;
  }

  #statusSet(status: S): Set<R> {
    let set = this.#byStatus.get(status);
    if (set === undefined) {
      set = new Set();
      this.#byStatus.set(status, set);
    }
    return set;
  }
}
