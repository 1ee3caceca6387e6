import type { GpuCloudClient } from '../../api/client.ts';
import { ReconcileError } from '../core/errors.ts';

/**
 * What an account allows the resources that use it. Absent limits do not limit: the implicit account of
 * the operator's flags has none, as before accounts existed.
 */
export interface AccountPolicy {
  /** Whether resources in `namespace` may use the account at all. */
  allowsNamespace(namespace: string): boolean;
  /** Whether a resource may take over a cloud object it did not create (adoption by id). */
  readonly adoption: boolean;
  /** Allowed `containerRegistryAuthId` values; undefined allows any. */
  readonly registryAuthIds?: ReadonlySet<string> | undefined;
  /** Allowed `credentialId` values; undefined allows any. */
  readonly credentialIds?: ReadonlySet<string> | undefined;
  /** GPU types a resource may ask for; undefined allows any. */
  readonly gpuTypes?: ReadonlySet<string> | undefined;
  readonly maxGpusPerResource?: number | undefined;
  /** Most GPUs live at once on the account, counting every object its lists show, managed or not. */
  readonly maxLiveGpus?: number | undefined;
  /** Limits in dollars per hour, on the whole account or on a set of its namespaces. */
  readonly budgets?: readonly BudgetLimit[] | undefined;
}

/** One budget as the guardrails check it: its limit per hour, and whom it covers. */
export interface BudgetLimit {
  readonly name: string;
  /**
   * US dollars per hour it allows now, and which of its limits that is: its hourly limit, or what its
   * monthly one leaves spread over the month's hours left, whichever is lower.
   */
  limit(): { perHour: number; by: string };
  /** The whole account: every object its lists show, managed or not. Else only `covers` namespaces'. */
  readonly accountWide: boolean;
  /** Whether it covers resources of `namespace`. */
  covers(namespace: string): boolean;
  /** `onExceeded: PausePods`: over its limit, it pauses the pods that allow it, the idlest first. */
  readonly pausesPods: boolean;
}

/** Which objects a spend counts: by the namespace of the resource that holds each (none for unmanaged). */
export type SpendScope = (namespace: string | undefined) => boolean;

/** What a budget counts: every object of the account, or those of resources of the namespaces it covers. */
export function budgetScope(budget: BudgetLimit): SpendScope {
  return budget.accountWide
    ? () => true
    : (namespace: string | undefined) => namespace !== undefined && budget.covers(namespace);
}

/** One cloud account: its client (with its own key, rate limit and metrics label) and its policy. */
export interface Account {
  readonly name: string;
  /** Claims are exclusive within a scope: the API URL, since two keys may belong to one organisation. */
  readonly scope: string;
  readonly client: GpuCloudClient;
  /** How often the account's objects are listed; the operator's setting when undefined. */
  readonly pollIntervalMs?: number | undefined;
  readonly policy: AccountPolicy;
  /** Keys that sign create intents; the first signs, any verifies (the one before a rotation too). */
  intentKeys(): readonly string[];
  /** Live GPUs across every kind's last list of this account. */
  readonly usage: Usage;
}

/** One kind's GPUs in an account, as its cloud cache lists them. */
export interface Meter {
  heldGpus(): number;
  /** Whether the kind's first list of the account is in: before it, the total cannot be trusted. */
  counted(): boolean;
  /**
   * Dollars per hour of the objects that hold GPUs, of those `scope` keeps; undefined while some of them
   * are not priced yet (their prices are being read).
   */
  spendPerHour(scope: SpendScope): number | undefined;
}

/** What a step in flight was allowed to add, until a list counts it. */
interface Reservation {
  readonly gpus: number;
  readonly perHour: number;
  /** The namespace of the resource it was made for. */
  readonly namespace: string;
  done(): boolean;
  /** Its object is in the kind's cache but no resource holds it yet: the meters count it as nobody's. */
  cached(): boolean;
}

/** Reservations below this many are never swept but by a check: a handful costs nothing. */
const MIN_SWEEP = 64;

/**
 * The GPUs an account holds: every metered kind's last list, plus what steps in flight were allowed to
 * add and no list shows yet. A check and the reservation it allows happen in one synchronous turn, so checks that
 * run concurrently (many reconciles, one slow cloud) see each other: the account's one reservation.
 */
export class Usage {
  readonly #meters = new Map<string, Meter>();
  readonly #reserved = new Set<Reservation>();
  /** Reservations after the last sweep: the next one comes once that many more were made. */
  #sweptAt = 0;

  /** `kind`'s GPUs, read when the total is asked for. */
  meter(kind: string, meter: Meter): void {
    this.#meters.set(kind, meter);
  }

  /** Whether every metered kind has listed the account once: a limit is checked only then. */
  counted(): boolean {
    for (const meter of this.#meters.values()) if (!meter.counted()) return false;
    return true;
  }

  total(): number {
    let sum = 0;
    for (const meter of this.#meters.values()) sum += meter.heldGpus();
    for (const reservation of this.#pending()) if (!reservation.cached()) sum += reservation.gpus;
    return sum;
  }

  /** Dollars per hour of what `scope` keeps, reservations included; undefined while not all is priced. */
  spendPerHour(scope: SpendScope): number | undefined {
    let sum = 0;
    for (const meter of this.#meters.values()) {
      const spend = meter.spendPerHour(scope);
      if (spend === undefined) return undefined;
      sum += spend;
    }
    for (const reservation of this.#pending()) {
      // A cached object nobody holds yet is the meters' already where the scope counts nobody's objects.
      const metered = reservation.cached() && scope(undefined);
      if (!metered && scope(reservation.namespace)) sum += reservation.perHour;
    }
    return sum;
  }

  /**
   * Counts what a step adds until `done()` says a list (or the cache) counts it; a negative one is what a
   * pause in flight sheds (a budget's `onExceeded`). A create's object is `cached()` between the cache
   * counting it and a resource holding it: the meters count it then, but only as nobody's.
   */
  reserve(
    adds: { gpus: number; perHour: number; namespace: string },
    done: () => boolean,
    cached: () => boolean = () => false,
  ): void {
    if (adds.gpus === 0 && adds.perHour === 0) return;
    this.#reserved.add({ ...adds, done, cached });
    // Only the checks of an account with limits read the reservations, and sweep them as they go: an
    // account without limits would otherwise keep one per create for good. Swept when they have doubled,
    // so that a burst of creates costs each a constant share of the sweeps.
    if (this.#reserved.size > 2 * this.#sweptAt + MIN_SWEEP) {
      for (const _ of this.#pending()); // walking the pending ones drops those done on the way
      this.#sweptAt = this.#reserved.size;
    }
  }

  /** Reservations kept now, some perhaps done and not yet swept. */
  get reservations(): number {
    return this.#reserved.size;
  }

  /** The reservations not done yet; those done are dropped on the way. */
  *#pending(): Iterable<Reservation> {
    for (const reservation of this.#reserved) {
      if (reservation.done()) this.#reserved.delete(reservation);
      else yield reservation;
    }
  }
}

/** Finds the account a resource names, and says why it may not use it when it may not. */
export interface AccountDirectory {
  /** The account named `name` for a resource in `namespace`; throws a `ReconcileError` otherwise. */
  resolve(name: string, namespace: string): Account;
  /** The scope of the account named `name`, when it is known. */
  scopeOf(name: string): string | undefined;
  /**
   * How many times the account named `name` changed (its spec, key or readiness) in this process: a
   * refusal that depended on the account stands only while this stays the same.
   */
  revision(name: string): number;
  /** Calls `listener` with the account's name each time one changes; answers how to stop. */
  onChange(listener: (name: string) => void): () => void;
}

/**
 * A resource names an account its namespace may not use. Nothing of that account is touched for it on any
 * path: not created, observed, adopted, recovered or deleted.
 */
export class NamespaceNotAllowedError extends ReconcileError {
  constructor(account: string, namespace: string) {
    super(
      'ProviderConfigNotAllowed',
      `namespace ${namespace} may not use provider config ${account}; ask its owner to allow the namespace, or name another in spec.providerConfigRef`,
      { terminal: true },
    );
  }
}

export function notAllowed(account: string, namespace: string): NamespaceNotAllowedError {
  return new NamespaceNotAllowedError(account, namespace);
}
