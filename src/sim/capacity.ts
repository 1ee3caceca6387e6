import { GPU_MODELS } from './catalog.ts';

export interface CapacityPoolOption {
  readonly region: string;
  readonly gpuType: string;
  readonly gpus: number;
}

export interface CapacityOptions {
  /** GPUs of each model in each region where it is offered, unless a pool says otherwise. */
  readonly gpusPerPool?: number;
  readonly pools?: readonly CapacityPoolOption[];
}

export const DEFAULT_GPUS_PER_POOL = 10_000;

/** GPUs held by one resource; releasing twice is harmless, so every exit path may release. */
export interface Reservation {
  readonly region: string;
  readonly gpuType: string;
  readonly gpus: number;
  release(): void;
}

/** A pool's size and the GPUs held from it. */
export interface PoolUsage {
  readonly region: string;
  readonly gpuType: string;
  readonly total: number;
  readonly used: number;
}

interface Pool {
  total: number;
  used: number;
  /** GPUs of the pool spot may hold at most; unlimited (the whole pool) when undefined. */
  spotTotal: number | undefined;
  spotUsed: number;
  /** Creates are accepted but no pod starts: each fails while INITIALIZING (a full pool the API missed). */
  failStarts: boolean;
}

const poolKey = (region: string, gpuType: string) => `${region}\u0000${gpuType}`;

/**
 * The finite supply of GPUs, per region and GPU model. Creating or resuming a resource reserves
 * GPUs; terminating, pausing, stopping or failing releases them.
 */
export class Capacity {
  readonly #pools = new Map<string, Pool>();

  constructor(options: CapacityOptions = {}) {
    const perPool = options.gpusPerPool ?? DEFAULT_GPUS_PER_POOL;
    assertGpus(perPool, 'gpusPerPool');
    for (const model of GPU_MODELS) {
      for (const region of model.regions)
        this.#pools.set(poolKey(region, model.gpuType), {
          total: perPool,
          used: 0,
          spotTotal: undefined,
          spotUsed: 0,
          failStarts: false,
        });
    }
    for (const pool of options.pools ?? []) this.setTotal(pool.region, pool.gpuType, pool.gpus);
  }

  /** Changes a pool's size at run time (used GPUs stay used even if that exceeds the new total). */
  setTotal(region: string, gpuType: string, gpus: number): void {
    assertGpus(gpus, `capacity of ${gpuType} in ${region}`);
    const pool = this.#pools.get(poolKey(region, gpuType));
    if (pool === undefined) throw new Error(`${gpuType} is not offered in region ${region}`);
    pool.total = gpus;
  }

  /**
   * Limits the GPUs of a pool spot capacity may hold (a cloud runs out of spot before it runs out of
   * machines); `undefined` lifts the limit. Spot already held stays held.
   */
  setSpotTotal(region: string, gpuType: string, gpus: number | undefined): void {
    if (gpus !== undefined) assertGpus(gpus, `spot capacity of ${gpuType} in ${region}`);
    const pool = this.#pools.get(poolKey(region, gpuType));
    if (pool === undefined) throw new Error(`${gpuType} is not offered in region ${region}`);
    pool.spotTotal = gpus;
  }

  /** Makes every pod created in the pool from now on fail before it starts (or start again, with false). */
  setStartFailures(region: string, gpuType: string, fail: boolean): void {
    const pool = this.#pools.get(poolKey(region, gpuType));
    if (pool === undefined) throw new Error(`${gpuType} is not offered in region ${region}`);
    pool.failStarts = fail;
  }

  startsFail(region: string, gpuType: string): boolean {
    return this.#pools.get(poolKey(region, gpuType))?.failStarts ?? false;
  }

  /** GPUs free for on-demand, or for spot when `spot` is true. */
  free(region: string, gpuType: string, spot = false): number {
    const pool = this.#pools.get(poolKey(region, gpuType));
    if (pool === undefined) return 0;
    const free = Math.max(0, pool.total - pool.used);
    return spot && pool.spotTotal !== undefined
      ? Math.min(free, Math.max(0, pool.spotTotal - pool.spotUsed))
      : free;
  }

  reserve(region: string, gpuType: string, gpus: number, spot = false): Reservation | undefined {
    const pool = this.#pools.get(poolKey(region, gpuType));
    if (pool === undefined || this.free(region, gpuType, spot) < gpus) return undefined;
    pool.used += gpus;
    const spotGpus = spot ? gpus : 0;
    pool.spotUsed += spotGpus;
    let held = true;
    return {
      region,
      gpuType,
      gpus,
      release() {
        if (!held) return;
        held = false;
        pool.used -= gpus;
        pool.spotUsed -= spotGpus;
      },
    };
  }

  /** Reserves in the first of `regions` with room. */
  reserveInAny(
    regions: readonly string[],
    gpuType: string,
    gpus: number,
    spot = false,
  ): Reservation | undefined {
    for (const region of regions) {
      const reservation = this.reserve(region, gpuType, gpus, spot);
      if (reservation !== undefined) return reservation;
    }
    return undefined;
  }

  describe(): PoolUsage[] {
    return [...this.#pools].map(([key, pool]) => {
      const [region = '', gpuType = ''] = key.split('\u0000');
      return { region, gpuType, total: pool.total, used: pool.used };
    });
  }
}

function assertGpus(gpus: number, what: string): void {
  if (!Number.isInteger(gpus) || gpus < 0)
    throw new RangeError(`${what} must be a whole number of GPUs, got ${gpus}`);
}
