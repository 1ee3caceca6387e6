import type { GpuCloudClient } from '../../api/client.ts';
import type { GpuSpec } from '../../api/schemas/gpus.ts';
import type { VmTypeItem, VmTypes } from '../../api/schemas/vms.ts';

/*
 * What things cost, from one account's price lists: the GPU offers (`POST /v2/gpu/list`) and the VM types
 * (`GET /v2/vms/types`). Read once and shared by every caller (plan, the budgets), refreshed on a bounded
 * schedule: a thousand prices asked at once cost one search, not a thousand. The per-kind price functions
 * (`resources/<kind>/price.ts`) read prices from it; docs/spend.md says how exact each is.
 */

/** Where a price book reads: one account's GPU search and VM types listing. */
export interface OfferSource {
  /** Every GPU offer, available now or not, across every page of the search. */
  offers(): Promise<readonly GpuSpec[]>;
  /** The VM types listing. */
  vmTypes(): Promise<VmTypes>;
}

/** An account's price lists through its client: one search (every page) and one VM types call per read. */
export function offerSourceOf(client: GpuCloudClient): OfferSource {
  return {
    // Unavailable offers too: a running object may sit in a pool that is full now, and a price is a price.
    offers: () => Array.fromAsync(client.pods.searchGpusAll({ includeUnavailable: true })),
    vmTypes: () => client.vms.types(),
  };
}

/** One rentable VM type in one region, as the VM types listing shows it. */
export interface VmTypeEntry {
  readonly gpuType: string;
  readonly region: string;
  readonly item: VmTypeItem;
}

/** What a lookup found, and when the list it was found in was read (epoch ms). */
export interface Found<T> {
  readonly asOf: number;
  readonly items: readonly T[];
}

export interface PriceBookOptions {
  /** A list older than this is read again on the next lookup; 30 seconds by default. */
  maxAgeMs?: number;
  /**
   * The least time between two reads of a list: a lookup that finds nothing reads again only when the list
   * is older than this, and a failed read is not tried again sooner; 30 seconds by default.
   */
  minRefreshMs?: number;
  /** Epoch milliseconds; `Date.now` by default. */
  now?: () => number;
}

/**
 * Offers say which pools have room as well as what they cost: placement chooses from them, so they are read
 * again at most this often (one search per account, whatever the number of resources asking).
 */
export const DEFAULT_MAX_AGE_MS = 30_000;
export const DEFAULT_MIN_REFRESH_MS = 30_000;

/**
 * One account's price lists, cached. Concurrent lookups share one read; a list is read again when it is
 * older than `maxAgeMs`, or when a lookup finds nothing in a list older than `minRefreshMs` (an offer or VM
 * type added since). A failed read leaves the last list in use (its `asOf` says how old it is) and is not
 * retried for `minRefreshMs`; with no list yet, lookups fail with the read's error until then.
 */
export class PriceBook {
  readonly #offers: Refreshed<GpuSpec>;
  readonly #vmTypes: Refreshed<VmTypeEntry>;

  constructor(source: OfferSource, options: PriceBookOptions = {}) {
    const timing = {
      maxAgeMs: options.maxAgeMs ?? DEFAULT_MAX_AGE_MS,
      minRefreshMs: options.minRefreshMs ?? DEFAULT_MIN_REFRESH_MS,
      now: options.now ?? Date.now,
    };
    this.#offers = new Refreshed(() => source.offers(), timing);
    this.#vmTypes = new Refreshed(
      async () =>
        (await source.vmTypes()).flatMap(({ gpuType, regions }) =>
          regions.flatMap(({ region, types }) => types.map((item) => ({ gpuType, region, item }))),
        ),
      timing,
    );
  }

  /** The GPU offers `match` keeps. */
  offers(match: (offer: GpuSpec) => boolean): Promise<Found<GpuSpec>> {
    return this.#offers.find(match);
  }

  /** The VM types `match` keeps. */
  vmTypes(match: (entry: VmTypeEntry) => boolean): Promise<Found<VmTypeEntry>> {
    return this.#vmTypes.find(match);
  }
}

interface Snapshot<T> {
  readonly at: number;
  readonly items: readonly T[];
}

interface Timing {
  readonly maxAgeMs: number;
  readonly minRefreshMs: number;
  readonly now: () => number;
}

/** A list read on demand, kept for `maxAgeMs`, never read twice at once nor twice within `minRefreshMs`. */
class Refreshed<T> {
  readonly #read: () => Promise<readonly T[]>;
  readonly #timing: Timing;
  #last: Snapshot<T> | undefined;
  #failed: { at: number; error: unknown } | undefined;
  #reading: Promise<Snapshot<T>> | undefined;

  constructor(read: () => Promise<readonly T[]>, timing: Timing) {
    this.#read = read;
    this.#timing = timing;
  }

  async find(match: (item: T) => boolean): Promise<Found<T>> {
    const first = await this.#current();
    const items = first.items.filter(match);
    if (items.length > 0) return { asOf: first.at, items };
    const again = await this.#fresherThan(first);
    return again === first ? { asOf: first.at, items } : { asOf: again.at, items: again.items.filter(match) };
  }

  #current(): Promise<Snapshot<T>> {
    if (this.#reading) return this.#reading;
    const last = this.#last;
    if (last && this.#timing.now() - last.at < this.#timing.maxAgeMs) return Promise.resolve(last);
    return this.#readUnlessFailedLately();
  }

  /** A list read after `seen`, when `seen` is old enough to read again; else `seen`. */
  #fresherThan(seen: Snapshot<T>): Promise<Snapshot<T>> {
    if (this.#reading) return this.#reading;
    if (this.#last && this.#last.at > seen.at) return Promise.resolve(this.#last);
    if (this.#timing.now() - seen.at < this.#timing.minRefreshMs) return Promise.resolve(seen);
    return this.#readUnlessFailedLately();
  }

  #readUnlessFailedLately(): Promise<Snapshot<T>> {
    const failed = this.#failed;
    if (failed && this.#timing.now() - failed.at < this.#timing.minRefreshMs) {
      return this.#last ? Promise.resolve(this.#last) : Promise.reject(failed.error);
    }
    const reading = this.#readNow();
    this.#reading = reading;
    reading
      .finally(() => {
        if (this.#reading === reading) this.#reading = undefined;
      })
      .catch(() => undefined);
    return reading;
  }

  async #readNow(): Promise<Snapshot<T>> {
    try {
      const items = await this.#read();
      this.#last = { at: this.#timing.now(), items };
      this.#failed = undefined;
      return this.#last;
    } catch (error) {
      this.#failed = { at: this.#timing.now(), error };
      if (this.#last) return this.#last;
      throw error;
    }
  }
}

/** Where a price was read: the object's own price fields, the GPU offers, or the VM types listing. */
export type PriceSource = 'object' | 'offers' | 'vmTypes';

/**
 * How exact a price is. `exact`: the object's own price field, what the cloud says it charges.
 * `quoted`: every offer (or VM type) the cloud could give it has this one price today: what the object
 * reports once made, at today's prices. `range`: the offers it could get differ (the cloud picks the region
 * or the machine); `perHour` is the highest of them, `lowestPerHour` the lowest.
 */
export type Exactness = 'exact' | 'quoted' | 'range';

/** An hourly price in the cloud's currency (US dollars): what something costs while it runs. */
export interface Priced {
  readonly priced: true;
  /** Per hour: the price, or the highest the cloud could charge when it picks among offers. */
  readonly perHour: number;
  /** Per hour: the lowest the cloud could charge (`perHour` when there is one price). */
  readonly lowestPerHour: number;
  /** An autoscaled endpoint: per hour at its most workers, what guardrails and budgets weigh it at. */
  readonly maxPerHour?: number | undefined;
  readonly currency: string;
  readonly source: PriceSource;
  readonly exactness: Exactness;
  /** What the price was read from, in words: the offer or type, or the field. */
  readonly basis: string;
  /** When the offers or VM types it was read from were listed (epoch ms); absent for an object's own price. */
  readonly asOf?: number | undefined;
  /** Offers and VM types: whether one it could get has room now; false means the create would wait. */
  readonly available?: boolean | undefined;
}

/**
 * Why there is no price. `NoOfferMatches`, `NoVmTypeMatches`: no offer or VM type fits what was asked, so
 * the cloud would refuse the create. `NotQuoted`: the cloud quotes no price for it before it exists (a CPU
 * pod: the GPU search lists GPU machines only).
 */
export type NoPriceReason = 'NoOfferMatches' | 'NoVmTypeMatches' | 'NotQuoted';

export interface Unpriced {
  readonly priced: false;
  readonly reason: NoPriceReason;
  /** What is missing, for a user: what was asked and what the lists have. */
  readonly message: string;
}

export type Price = Priced | Unpriced;

/** One thing the cloud could charge for: its hourly price, where it comes from, and whether it has room. */
export interface Candidate {
  readonly perHour: number;
  readonly currency: string;
  readonly basis: string;
  readonly available: boolean;
}

/**
 * The price of something the cloud places on one of `candidates`: among those with room now if any has
 * (the cloud places it there), else among all (the create would wait for room). One price is `quoted`,
 * several make a `range` up to the highest.
 */
export function priceOf(
  candidates: readonly Candidate[],
  source: 'offers' | 'vmTypes',
  asOf: number,
): Priced | undefined {
  const open = candidates.filter((candidate) => candidate.available);
  const chosen = open.length > 0 ? open : candidates;
  const [first] = chosen;
  if (first === undefined) return undefined;
  const prices = chosen.map((candidate) => candidate.perHour);
  const highest = Math.max(...prices);
  const lowest = Math.min(...prices);
  const top = chosen.find((candidate) => candidate.perHour === highest) ?? first;
  const others = chosen.length - 1;
  return {
    priced: true,
    perHour: highest,
    lowestPerHour: lowest,
    currency: first.currency,
    source,
    exactness: highest === lowest ? 'quoted' : 'range',
    basis: others === 0 ? top.basis : `${top.basis} (the highest of ${chosen.length} it could get)`,
    asOf,
    available: open.length > 0,
  };
}

/** A price read from the object itself: exact. */
export function exactPrice(perHour: number, basis: string, currency = 'USD'): Priced {
  return {
    priced: true,
    perHour,
    lowestPerHour: perHour,
    currency,
    source: 'object',
    exactness: 'exact',
    basis,
  };
}

/** `price` times `n` (workers), keeping where it came from. */
export function times(price: Priced, n: number): Priced {
  return { ...price, perHour: price.perHour * n, lowestPerHour: price.lowestPerHour * n };
}

/** A decimal string of the API as a number; `undefined` when it is not one. */
export function decimal(text: string | undefined): number | undefined {
  if (text === undefined || text.trim() === '') return undefined;
  const value = Number(text);
  return Number.isFinite(value) ? value : undefined;
}
