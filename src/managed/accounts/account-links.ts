import type { GpuCloudClient } from '../../api/client.ts';
import type { Clock } from '../../lib/clock.ts';
import type { Logger } from '../../lib/logger.ts';
import { CloudCache } from '../cloud-cache/cloud-cache.ts';
import { DetailSchedule } from '../cloud-cache/detail-schedule.ts';
import { accountOf } from '../core/account-ref.ts';
import type { EventSink } from '../core/event-sink.ts';
import { type CommonSpec, type ExternalKind, type ManagedObject, meteringOf } from '../core/external-kind.ts';
import { fencedAdapter } from '../core/fence.ts';
import type { ManagedStore } from '../core/store.ts';
import type { ManagedWriter } from '../core/writer.ts';
import { Creation, type CreationOptions } from '../creation/creation.ts';
import { Placer } from '../creation/placement.ts';
import type { Account, AccountDirectory } from './accounts.ts';
import { guardedAdapter } from './guardrails.ts';
import { ObjectPrices } from './object-prices.ts';

/** Everything one kind needs to act in one cloud account. */
export interface AccountLink<Spec extends CommonSpec, Cloud> {
  readonly account: Account;
  /** The kind's adapter on the account's client, behind the leadership fence and the account's policy. */
  readonly adapter: ExternalKind<Spec, Cloud>;
  readonly cache: CloudCache<Cloud>;
  readonly creation: Creation<Spec, Cloud>;
  readonly details: DetailSchedule | undefined;
  /** Idle checks of the resources that ask for them, on a budget of their own. */
  readonly idle: DetailSchedule | undefined;
  /**
   * When this process last acted on a cloud id of the account, as the cache stamps it (`CloudCache.stamp`):
   * observations older than that are stale.
   */
  readonly actedAt: Map<string, number>;
}

export interface AccountLinkSettings {
  readonly pollIntervalMs: number;
  readonly refreshMinIntervalMs: number;
  readonly detailsCallsPerSecond: number;
  readonly detailsIntervalMs: number;
  /** Cloud calls per second idle checks may spend, per kind and account. */
  readonly idleChecksPerSecond: number;
  /** How often one resource's utilisation is looked at, at most. */
  readonly idleCheckIntervalMs: number;
  readonly creation: Omit<CreationOptions, 'intentKeys' | 'clock' | 'placer' | 'events'>;
}

export interface AccountLinksOptions<Spec extends CommonSpec, Cloud> {
  /** The kind's adapter on a given account's client. */
  adapterFor(client: GpuCloudClient): ExternalKind<Spec, Cloud>;
  accounts: AccountDirectory;
  store: ManagedStore;
  writer: ManagedWriter;
  settings: AccountLinkSettings;
  /** Whether this process may change the cloud now (it holds the lease). */
  mayAct(): boolean;
  /** Wakes the reconcile of the resources that name a cloud id whose object changed. */
  wake(id: string): void;
  /** Wakes one resource, by `namespace/name` key, when its details are due. */
  wakeKey(key: string): void;
  /** For kinds whose objects hold GPUs: the hub that opens every such kind's link to an account in use. */
  metering?: AccountMetering | undefined;
  /** Where what creation does on its own (a move to the next offer) is told. */
  events: EventSink;
  clock: Clock;
  log: Logger;
}

/**
 * Opens every GPU-holding kind's link to an account as soon as any kind uses it, so that the account's
 * limits count its objects of every kind from the first list, managed or not: a VM made outside the
 * cluster counts against a pod's limit though no GpuVm names the account.
 */
export class AccountMetering {
  readonly #openers: Array<(account: Account) => void> = [];
  readonly #used = new WeakSet<Account>();

  add(open: (account: Account) => void): void {
    this.#openers.push(open);
  }

  used(account: Account): void {
    // Only a limit needs the other kinds' lists: an account without one costs no extra call.
    const { maxLiveGpus, budgets } = account.policy;
    const limited = maxLiveGpus !== undefined || (budgets?.length ?? 0) > 0;
    if (!limited || this.#used.has(account)) return;
    this.#used.add(account);
    for (const open of this.#openers) open(account);
  }
}

/**
 * One kind's links, one per cloud account in use, made when a resource first names the account:
 * each with its own adapter (on the account's client, so its own key, rate limit and metrics label),
 * cloud cache (one list per kind per account per poll) and details budget. They run while the
 * controller runs, that is on the leader.
 */
export class AccountLinks<Spec extends CommonSpec, Cloud> {
  readonly #o: AccountLinksOptions<Spec, Cloud>;
  readonly #links = new Map<string, AccountLink<Spec, Cloud>>();
  #running = false;

  constructor(options: AccountLinksOptions<Spec, Cloud>) {
    this.#o = options;
    options.metering?.add((account) => void this.#open(account));
  }

  /** The link to the account `mr` names; throws a `ReconcileError` when it may not use one. */
  linkFor(mr: ManagedObject<unknown>): AccountLink<Spec, Cloud> {
    const account = this.#o.accounts.resolve(accountOf(mr.spec), mr.metadata.namespace);
    const link = this.#open(account);
    // Every kind that holds GPUs lists the account from now on, so its limits count them all.
    this.#o.metering?.used(account);
    return link;
  }

  #open(account: Account): AccountLink<Spec, Cloud> {
    const known = this.#links.get(account.name);
    if (known?.account === account) return known;
    if (known) this.#stop(known);
    const made = this.#make(account);
    this.#links.set(account.name, made);
    if (this.#running) this.#start(made);
    return made;
  }

  /**
   * Drops what every open link remembers of a resource that is gone, and of the cloud objects it named
   * (`ids`) once no other resource claims them: an object left running (its finalizer removed by hand) is
   * the cloud's, and nothing of it is kept.
   */
  forget(uid: string, key: string, ids: readonly string[] = []): void {
    const unclaimed = ids.filter((id) => this.#o.store.claimsOn(id).length === 0);
    for (const link of this.#links.values()) {
      link.creation.forget(uid);
      link.details?.untrack(key);
      link.idle?.untrack(key);
      for (const id of unclaimed) link.actedAt.delete(id);
    }
  }

  /** What the open links keep, summed over accounts: see `ManagedReconciler.remembered`. */
  remembered(): Record<string, number> {
    const sums = { creations: 0, details: 0, idleChecks: 0, acts: 0, cloudObjects: 0, completedViews: 0 };
    for (const link of this.#links.values()) {
      sums.creations += link.creation.size;
      sums.details += link.details?.size ?? 0;
      sums.idleChecks += link.idle?.size ?? 0;
      sums.acts += link.actedAt.size;
      sums.cloudObjects += link.cache.size;
      sums.completedViews += link.cache.views;
    }
    return sums;
  }

  /** How many times the account named `name` changed: see `AccountDirectory.revision`. */
  accountRevision(name: string): number {
    return this.#o.accounts.revision(name);
  }

  /** Calls `listener` with an account's name each time it changes. */
  onAccountChange(listener: (name: string) => void): () => void {
    return this.#o.accounts.onChange(listener);
  }

  /** Whether two accounts' claims collide: they share an API URL (an unknown account collides with all). */
  sameScope(account: Account, other: string): boolean {
    const scope = this.#o.accounts.scopeOf(other);
    return scope === undefined || scope === account.scope;
  }

  start(): void {
    this.#running = true;
    for (const link of this.#links.values()) this.#start(link);
  }

  stop(): void {
    this.#running = false;
    for (const link of this.#links.values()) this.#stop(link);
  }

  /** A callback says cloud object `id` is in `phase`: tells the caches that hold it, or all when none does. */
  hint(id: string, phase: string): void {
    const links = [...this.#links.values()];
    const holders = links.filter(({ cache }) => cache.sight(id, 0).kind === 'seen');
    for (const { cache } of holders.length > 0 ? holders : links) cache.hint(id, phase);
  }

  #make(account: Account): AccountLink<Spec, Cloud> {
    const { settings, log, clock } = this.#o;
    // The cache tells changes to creation's memory of what it made, and is made first.
    let creation: Creation<Spec, Cloud> | undefined;
    const base = this.#o.adapterFor(account.client);
    const cache = new CloudCache(base, {
      intervalMs: account.pollIntervalMs ?? settings.pollIntervalMs,
      minIntervalMs: settings.refreshMinIntervalMs,
      onChange: (id) => {
        this.#o.wake(id);
        // A change of an object this process just made, before the informer shows its resource holding it.
        const madeFor = creation?.madeFor(id);
        if (madeFor !== undefined) this.#o.wakeKey(madeFor);
      },
      clock,
      log: log.child({ account: account.name }),
    });
    const counted = {
      has: (id: string) => cache.has(id),
      claimed: (id: string) => this.#o.store.claimsOn(id).length > 0,
      listedSince: (at: number) => cache.listedSince(at),
      requestRefresh: () => cache.requestRefresh(),
    };
    const adapter = fencedAdapter(guardedAdapter(base, account, counted, clock), () => this.#o.mayAct());
    if (this.#o.metering) {
      const metering = meteringOf(base);
      const prices = new ObjectPrices({ ...base, ...metering }, log);
      // An object's namespace is its holder's; one no resource holds counts only for account-wide budgets.
      const namespaceOf = (id: string) => this.#o.store.claimsOn(id)[0]?.key.namespace;
      account.usage.meter(base.kind, {
        heldGpus: () => cache.objects().reduce((sum, cloud) => sum + metering.heldGpus(cloud), 0),
        counted: () => cache.hasSynced(),
        spendPerHour: (scope) => prices.total(cache.objects(), (id) => scope(namespaceOf(id))),
      });
    }
    const details =
      base.details &&
      new DetailSchedule({
        callsPerSecond: settings.detailsCallsPerSecond,
        callsPerFetch: base.details.calls,
        intervalMs: settings.detailsIntervalMs,
        enqueue: (key) => this.#o.wakeKey(key),
        clock,
      });
    const idleCheck = base.pause?.idle;
    const idle =
      idleCheck &&
      new DetailSchedule({
        callsPerSecond: settings.idleChecksPerSecond,
        callsPerFetch: idleCheck.calls,
        intervalMs: settings.idleCheckIntervalMs,
        enqueue: (key) => this.#o.wakeKey(key),
        clock,
      });
    const allowed = account.policy.gpuTypes;
    creation = new Creation(adapter, cache, this.#o.store, this.#o.writer, {
      ...settings.creation,
      intentKeys: () => account.intentKeys(),
      clock,
      placer:
        base.placement &&
        new Placer(base.placement, (gpuType) => allowed === undefined || allowed.has(gpuType), clock),
      events: this.#o.events,
    });
    return { account, adapter, cache, creation, details, idle, actedAt: new Map() };
  }

  #start(link: AccountLink<Spec, Cloud>): void {
    link.cache.start();
    link.details?.start();
    link.idle?.start();
  }

  #stop(link: AccountLink<Spec, Cloud>): void {
    link.cache.stop();
    link.details?.stop();
    link.idle?.stop();
  }
}
