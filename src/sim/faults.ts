import { z } from 'zod';
import type { Random } from './random.ts';

const probability = z.number().min(0).max(1);

/**
 * The faults the simulator injects. Request faults hit API calls (optionally only some operations);
 * the rates per second hit running resources on a periodic sweep.
 */
export const faultConfigSchema = z.strictObject({
  /** Added to every API call before it is handled. */
  latencyMs: z.number().int().min(0).max(600_000),
  /** Share of calls answered HTTP 500 with code 10002, before any effect. */
  errorRate: probability,
  /** Share of calls answered HTTP 429 with `Retry-After`. */
  rateLimitRate: probability,
  retryAfterSeconds: z.number().int().min(0).max(3600),
  /** Share of calls whose connection is destroyed without an answer. */
  dropRate: probability,
  /**
   * When true a dropped call is carried out before its connection is destroyed, so the caller
   * cannot know whether it happened (the crash-safety case); when false it is dropped unseen.
   */
  dropAfterEffect: z.boolean(),
  /** Operation names the request faults apply to; null means every operation. */
  operations: z.array(z.string()).nullable(),
  /** Per second, the chance that each RUNNING pod moves to FAILED. */
  podFailureRate: probability,
  /** Per second, the chance that each RUNNING pod moves to DEGRADED. */
  podDegradeRate: probability,
  /** Per second, the chance that each running spot pod or spot VM is preempted (moves to FAILED). */
  spotPreemptionRate: probability,
  /** Share of serverless tasks that end FAILED instead of SUCCESS. */
  taskFailureRate: probability,
});
export type FaultConfig = z.output<typeof faultConfigSchema>;
export const faultPatchSchema = faultConfigSchema.partial();
export type FaultPatch = z.output<typeof faultPatchSchema>;

export const NO_FAULTS: FaultConfig = Object.freeze({
  latencyMs: 0,
  errorRate: 0,
  rateLimitRate: 0,
  retryAfterSeconds: 1,
  dropRate: 0,
  dropAfterEffect: false,
  operations: null,
  podFailureRate: 0,
  podDegradeRate: 0,
  spotPreemptionRate: 0,
  taskFailureRate: 0,
});

/** What happens to one API call. */
export type RequestFault =
  | { readonly kind: 'none' }
  | { readonly kind: 'error' }
  | { readonly kind: 'rate-limit'; readonly retryAfterSeconds: number }
  | { readonly kind: 'drop'; readonly afterEffect: boolean };

const NONE: RequestFault = { kind: 'none' };

export class Faults {
  readonly #random: Random;
  #config: FaultConfig = NO_FAULTS;

  constructor(random: Random) {
    this.#random = random;
  }

  get config(): FaultConfig {
    return this.#config;
  }

  /** Merges a validated patch; throws a ZodError naming the bad field otherwise. */
  update(patch: FaultPatch): FaultConfig {
    this.#config = Object.freeze(
      faultConfigSchema.parse({ ...this.#config, ...faultPatchSchema.parse(patch) }),
    );
    return this.#config;
  }

  latencyFor(operation: string): number {
    return this.#applies(operation) ? this.#config.latencyMs : 0;
  }

  /** Draws the fault for one call of `operation`. */
  forRequest(operation: string): RequestFault {
    if (!this.#applies(operation)) return NONE;
    const { dropRate, errorRate, rateLimitRate, dropAfterEffect, retryAfterSeconds } = this.#config;
    if (this.#random.chance(dropRate)) return { kind: 'drop', afterEffect: dropAfterEffect };
    if (this.#random.chance(errorRate)) return { kind: 'error' };
    if (this.#random.chance(rateLimitRate)) return { kind: 'rate-limit', retryAfterSeconds };
    return NONE;
  }

  /** True with the chance that an event of `ratePerSecond` happens within `elapsedMs`. */
  happensWithin(ratePerSecond: number, elapsedMs: number): boolean {
    return this.#random.chance(1 - (1 - ratePerSecond) ** (elapsedMs / 1000));
  }

  taskFails(): boolean {
    return this.#random.chance(this.#config.taskFailureRate);
  }

  #applies(operation: string): boolean {
    const { operations } = this.#config;
    return operations === null || operations.includes(operation);
  }
}
