import type { Logger } from 'pino';
import type { Clock } from '../../lib/clock.ts';
import type { ExternalKind } from '../core/external-kind.ts';

/** The parts of a kind's adapter the cache uses. */
export type CloudLister<Cloud> = Pick<
  ExternalKind<unknown, Cloud>,
  'kind' | 'list' | 'get' | 'idOf' | 'fingerprint' | 'phaseOf' | 'enrich'
>;

/** What the cache can say about one cloud id. */
export type Sighting<Cloud> =
  | { kind: 'seen'; cloud: Cloud }
  /** A list that started after the caller's moment does not contain the id. */
  | { kind: 'absent' }
  /** Nothing seen since the caller's moment: the cache cannot tell yet. */
  | { kind: 'unknown' };

export interface CloudCacheOptions {
  /** Steady-state interval between two lists. */
  intervalMs: number;
  /** Earliest a requested refresh may follow the previous list, so bursts of requests coalesce. */
  minIntervalMs: number;
  /** Called with every id whose fingerprint changed, appeared or disappeared between two lists. */
  onChange(id: string): void;
  clock: Clock;
  log: Logger;
}

interface Waiter {
  after: number;
  resolve: () => void;
}

interface Entry<Cloud> {
  cloud: Cloud;
  fingerprint: string;
  /** When this state was known to hold: the start of the list that carried it, or a first-hand answer. */
  seenAt: number;
}

/**
 * The cloud's side of an informer: one list call per kind per interval (paged by the adapter) instead of
 * one get per resource, with change detection that wakes only the custom resources whose cloud object
 * changed. Reconcilers that just acted ask for an early refresh; concurrent requests share one list.
 */
export class CloudCache<Cloud> {
  readonly #adapter: CloudLister<Cloud>;
  readonly #options: CloudCacheOptions;
  readonly #entries = new Map<string, Entry<Cloud>>();
  /** Completed (enriched) objects by id, valid while the object's fingerprint stays the same. */
  readonly #completed = new Map<string, { fingerprint: string; cloud: Cloud }>();
  /** When the list behind `#entries` started; 0 before the first list completes. */
  #takenAt = 0;
  /** The last stamp given (see `stamp`). */
  #lastStamp = 0;
  #lastStart = 0;
  #timer: NodeJS.Timeout | undefined;
  #timerAt = Number.POSITIVE_INFINITY;
  #running: Promise<void> | undefined;
  /** A refresh was asked for since the last list started. */
  #asked = false;
  /**
   * States callbacks announced that the cache did not show, by id. Checked again when their list would
   * start: the answer of a create in flight usually shows them by then, and the list is not needed.
   */
  readonly #hinted = new Map<string, string>();
  #waiters: Waiter[] = [];
  /** Ids a callback is having read now, so a repeated callback does not read them twice. */
  readonly #reading = new Set<string>();
  /** When a callback last had one object read: within the coalescing window, the next rides a list. */
  #readAt = Number.NEGATIVE_INFINITY;
  #stopped = false;
  #failures = 0;

  constructor(adapter: CloudLister<Cloud>, options: CloudCacheOptions) {
    this.#adapter = adapter;
    this.#options = options;
  }

  start(): void {
    this.#schedule(0);
  }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
    for (const waiter of this.#waiters.splice(0)) waiter.resolve();
  }

  /** Whether at least one list has completed. */
  hasSynced(): boolean {
    return this.#takenAt > 0;
  }

  /** Whether the view comes from a list that started at or after `at` (epoch ms). */
  listedSince(at: number): boolean {
    return this.#takenAt >= at;
  }

  /** Whether the cache holds `id`, listed or remembered. */
  has(id: string): boolean {
    return this.#entries.has(id);
  }

  get size(): number {
    return this.#entries.size;
  }

  /** The cache's view of `id`, counting only what was known at or after `notBefore` (epoch ms). */
  sight(id: string, notBefore: number): Sighting<Cloud> {
    const entry = this.#entries.get(id);
    if (entry && entry.seenAt >= notBefore) return { kind: 'seen', cloud: entry.cloud };
    if (this.#takenAt > 0 && this.#takenAt >= notBefore && !entry) return { kind: 'absent' };
    return { kind: 'unknown' };
  }

  /** Every cached object, for crash recovery's search of what an interrupted create made. */
  objects(): Cloud[] {
    return Array.from(this.#entries.values(), (entry) => entry.cloud);
  }

  /** Records what a reconciler learnt first-hand (a create's answer, a get), so the next list compares to it. */
  remember(cloud: Cloud): void {
    const id = this.#adapter.idOf(cloud);
    this.#entries.set(id, {
      cloud,
      fingerprint: this.#adapter.fingerprint(cloud),
      seenAt: this.stamp(),
    });
  }

  /**
   * The time of a sighting or of an act on an object, never equal to another: the clock's milliseconds,
   * moved on by a microsecond when it has not moved. A list that starts in the same millisecond as an act
   * but before it must not pass for one that saw it (a pause sent again from the copy it listed).
   */
  stamp(): number {
    const now = this.#options.clock.now();
    this.#lastStamp = now > this.#lastStamp ? now : this.#lastStamp + 0.001;
    return this.#lastStamp;
  }

  /**
   * `cloud` as complete as a get makes it, for kinds whose list carries less: from the last completion
   * while the fingerprint is unchanged, else one read.
   */
  async complete(cloud: Cloud): Promise<Cloud> {
    const adapter = this.#adapter;
    if (!adapter.enrich) return cloud;
    const known = this.#completed.get(adapter.idOf(cloud));
    if (known?.fingerprint === adapter.fingerprint(cloud)) return known.cloud;
    const full = await adapter.enrich(cloud);
    // Keyed by what the read returned: it may be newer than the list (the pod was paused meanwhile), and
    // kept under the list's fingerprint it would be served again once the list shows that state anew.
    this.rememberComplete(full);
    return full;
  }

  /** Records an object known to be complete (a create's answer). */
  rememberComplete(full: Cloud): void {
    const adapter = this.#adapter;
    if (adapter.enrich)
      this.#completed.set(adapter.idOf(full), { fingerprint: adapter.fingerprint(full), cloud: full });
  }

  /** Completed views it keeps (`complete`, `rememberComplete`): one per object a resource holds. */
  get views(): number {
    return this.#completed.size;
  }

  /** Drops the completed view of `id`: no resource holds it any more. */
  forget(id: string): void {
    this.#completed.delete(id);
  }

  /**
   * The cloud says `id` is now in `phase` (a callback). A list due within the coalescing window carries
   * it: it is asked to check, unless the cache shows that state by the time it starts — a create answers
   * with its state, so the callback announcing that same state (often arriving before the answer) is no
   * news, and under a burst of creates it would otherwise cost one list per minimum interval. With no
   * list due so soon, that one object is read — one per window: a burst of callbacks shares a list.
   */
  hint(id: string, phase: string): void {
    if (this.#shows(id, phase) || this.#stopped) return;
    if (this.#listDueWithin(this.#options.minIntervalMs)) {
      this.#hinted.set(id, phase);
      this.#scheduleSoon();
      return;
    }
    void this.#readOne(id);
  }

  #listDueWithin(ms: number): boolean {
    const now = this.#options.clock.now();
    const pending = this.#running !== undefined || this.#asked || this.#hinted.size > 0;
    return pending || this.#waiters.length > 0 || this.#timerAt <= now + ms || now - this.#readAt < ms;
  }

  async #readOne(id: string): Promise<void> {
    if (this.#reading.has(id)) return;
    this.#reading.add(id);
    const startedAt = this.stamp();
    this.#readAt = startedAt;
    try {
      const cloud = await this.#adapter.get(id);
      if (cloud === undefined || this.#stopped) {
        // Gone: only a list can say so for every holder of the cache.
        this.requestRefresh();
        return;
      }
      const known = this.#entries.get(id);
      if (known && known.seenAt > startedAt) return;
      const fingerprint = this.#adapter.fingerprint(cloud);
      this.#entries.set(id, { cloud, fingerprint, seenAt: startedAt });
      // A get answers the whole object.
      this.rememberComplete(cloud);
      if (known?.fingerprint !== fingerprint) this.#options.onChange(id);
    } catch (error) {
      this.#options.log.warn(
        { kind: this.#adapter.kind, id, err: error },
        'reading one object failed; listing',
      );
      this.requestRefresh();
    } finally {
      this.#reading.delete(id);
    }
  }

  /** Asks for a list that starts after now, as soon as the minimum interval allows. */
  requestRefresh(): void {
    if (this.#stopped) return;
    this.#asked = true;
    this.#scheduleSoon();
  }

  /** Resolves once a list that started at or after `after` has completed (or the cache stopped). */
  async waitForListAfter(after: number): Promise<void> {
    if (this.#takenAt >= after || this.#stopped) return;
    const done = new Promise<void>((resolve) => this.#waiters.push({ after, resolve }));
    this.requestRefresh();
    return done;
  }

  #shows(id: string, phase: string): boolean {
    const entry = this.#entries.get(id);
    return entry !== undefined && this.#adapter.phaseOf(entry.cloud) === phase;
  }

  #scheduleSoon(): void {
    this.#schedule(Math.max(0, this.#lastStart + this.#options.minIntervalMs - this.#options.clock.now()));
  }

  #schedule(delayMs: number): void {
    if (this.#stopped || this.#running) return;
    const at = this.#options.clock.now() + delayMs;
    const current = this.#timer ? this.#timerAt : Number.POSITIVE_INFINITY;
    if (at >= current) return;
    clearTimeout(this.#timer);
    this.#timerAt = at;
    this.#timer = setTimeout(() => void this.#refresh(), delayMs);
  }

  async #refresh(): Promise<void> {
    this.#timer = undefined;
    this.#timerAt = Number.POSITIVE_INFINITY;
    const startedAt = this.stamp();
    const dueAt = this.#lastStart + this.#nextInterval();
    for (const [id, phase] of this.#hinted) if (this.#shows(id, phase)) this.#hinted.delete(id);
    if (startedAt < dueAt && !this.#asked && this.#waiters.length === 0 && this.#hinted.size === 0) {
      this.#schedule(dueAt - startedAt);
      return;
    }
    this.#lastStart = startedAt;
    this.#asked = false;
    this.#hinted.clear();
    this.#running = this.#listAndCompare(startedAt);
    await this.#running;
    this.#running = undefined;
    const pending = this.#asked || this.#hinted.size > 0 || this.#waiters.length > 0;
    this.#schedule(pending ? this.#options.minIntervalMs : this.#nextInterval());
  }

  #nextInterval(): number {
    // A failing list backs off (capped at the steady interval) rather than hammering a sick API.
    if (this.#failures === 0) return this.#options.intervalMs;
    return Math.min(this.#options.intervalMs, this.#options.minIntervalMs * 2 ** this.#failures);
  }

  async #listAndCompare(startedAt: number): Promise<void> {
    let listed: Cloud[];
    try {
      listed = await this.#adapter.list();
    } catch (error) {
      this.#failures += 1;
      this.#options.log.warn(
        { kind: this.#adapter.kind, err: error },
        'cloud list failed; keeping the last view',
      );
      return;
    }
    this.#failures = 0;
    const changed = this.#merge(listed, startedAt);
    this.#takenAt = startedAt;
    for (const id of changed) this.#options.onChange(id);
    this.#releaseWaiters();
  }

  /**
   * Folds a list into the cache and names the ids that changed, appeared or disappeared. An object whose
   * fingerprint is unchanged keeps its cached copy (only its sighting time moves): a steady list then
   * leaves nothing behind for the garbage collector but the list itself.
   */
  #merge(listed: readonly Cloud[], startedAt: number): string[] {
    const changed: string[] = [];
    const listedIds = new Set<string>();
    for (const cloud of listed) {
      const id = this.#adapter.idOf(cloud);
      listedIds.add(id);
      const known = this.#entries.get(id);
      // What a reconciler learnt while this list ran is newer than the list: keep it.
      if (known && known.seenAt > startedAt) continue;
      const fingerprint = this.#adapter.fingerprint(cloud);
      if (known?.fingerprint === fingerprint) {
        known.seenAt = startedAt;
        continue;
      }
      this.#entries.set(id, { cloud, fingerprint, seenAt: startedAt });
      changed.push(id);
    }
    for (const [id, entry] of this.#entries) {
      if (listedIds.has(id) || entry.seenAt > startedAt) continue;
      this.#entries.delete(id);
      changed.push(id);
    }
    // A view completed after its resource let go (a reconcile in flight then) has nobody to forget it:
    // it goes with the object, once the cache no longer holds it.
    for (const id of this.#completed.keys()) if (!this.#entries.has(id)) this.#completed.delete(id);
    return changed;
  }

  #releaseWaiters(): void {
    const still: Waiter[] = [];
    for (const waiter of this.#waiters) {
      if (this.#takenAt >= waiter.after) waiter.resolve();
      else still.push(waiter);
    }
    this.#waiters = still;
  }
}
