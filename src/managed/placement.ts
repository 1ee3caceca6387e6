import { ApiCode } from '../api/codes.ts';
import { CloudApiError } from '../api/errors.ts';
import type { Clock } from '../lib/clock.ts';
import { ReconcileError } from './errors.ts';
import type { ManagedObject, Offer, PlacementSupport } from './external-kind.ts';
import type { ManagedStatus, PlacementStatus } from './status-schema.ts';

export type Attempt = NonNullable<PlacementStatus['attempts']>[number];

const MAX_ATTEMPTS_KEPT = 16;

/** Prices as the API writes them: a decimal string. */
export function priceText(perGpuHour: number): string {
  return perGpuHour.toFixed(4);
}

function sameOffer(a: Omit<Offer, 'pricePerGpuHour'>, b: Omit<Offer, 'pricePerGpuHour'>): boolean {
  return a.gpuType === b.gpuType && a.region === b.region && a.spot === b.spot;
}

export function describeOffer(
  offer: Omit<Offer, 'pricePerGpuHour'> & { pricePerGpuHour: number | string },
): string {
  return `${offer.gpuType} ${offer.spot ? 'spot' : 'on-demand'} in ${offer.region} at ${offer.pricePerGpuHour} USD/GPU-hour`;
}

/**
 * Chooses where a resource's object is made: the first offer its spec accepts that nothing since the offers
 * were read has ruled out (a refusal for lack of room, a preemption), up to the spec's number of attempts.
 * When none is left it says why, and the resource looks again when the offers are read again.
 */
export class Placer<Spec, Cloud> {
  readonly #support: PlacementSupport<Spec, Cloud>;
  readonly #allowed: (gpuType: string) => boolean;
  readonly #clock: Clock;

  constructor(support: PlacementSupport<Spec, Cloud>, allowed: (gpuType: string) => boolean, clock: Clock) {
    this.#support = support;
    this.#allowed = allowed;
    this.#clock = clock;
  }

  requested(mr: ManagedObject<Spec>): boolean {
    return this.#support.requested(mr.spec);
  }

  /** A placement for `mr`, after `tried` (this round's attempts, oldest first). */
  async choose(mr: ManagedObject<Spec>, tried: readonly Attempt[]): Promise<PlacementStatus> {
    const { asOf, offers, none } = await this.#support.offers(mr.spec, this.#allowed);
    const attempts = [...lostBefore(mr.status), ...tried].slice(-MAX_ATTEMPTS_KEPT);
    // What the offers could not know yet: what was tried since they were read.
    const ruledOut = attempts.filter((attempt) => Date.parse(attempt.at) >= asOf);
    const limit = this.#support.maxAttempts(mr.spec);
    const next = offers.find((offer) => !ruledOut.some((attempt) => sameOffer(attempt, offer)));
    const retryAfterMs = this.#support.refreshMs;
    const later = `looked at again in ${Math.round(retryAfterMs / 1000)} s`;
    if (ruledOut.length >= limit || next === undefined) {
      if (ruledOut.length === 0) {
        throw new ReconcileError('NoOfferWithinPrice', `${none}; nothing is created; ${later}`, {
          terminal: false,
          retryAfterMs,
        });
      }
      throw new ReconcileError(
        'NoCapacity',
        `no offer left to try: ${ruledOut.map((attempt) => `${describeOffer(attempt)} (${attempt.outcome})`).join('; ')}; ${later}`,
        { terminal: false, retryAfterMs },
      );
    }
    return {
      gpuType: next.gpuType,
      region: next.region,
      spot: next.spot,
      pricePerGpuHour: priceText(next.pricePerGpuHour),
      placedAt: new Date(this.#clock.now()).toISOString(),
      ...(attempts.length > 0 ? { attempts } : {}),
    };
  }

  /** The attempt `placement` becomes when the cloud refused it for lack of room. */
  refused(placement: PlacementStatus): Attempt {
    return attemptOf(placement, 'NoCapacity', new Date(this.#clock.now()).toISOString());
  }
}

function attemptOf(placement: PlacementStatus, outcome: Attempt['outcome'], at: string): Attempt {
  const { gpuType, region, spot, pricePerGpuHour } = placement;
  return { gpuType, region, spot, pricePerGpuHour, outcome, at };
}

/**
 * The attempts a new placement starts from: those of the last one, and the last one itself when its object
 * was preempted since it was placed, so a replacement does not go straight back to the offer that lost it.
 */
function lostBefore(status: ManagedStatus | undefined): Attempt[] {
  const last = status?.placement;
  if (!last) return [];
  const previous = last.attempts ?? [];
  // Only a loss seen after that placement was made is that placement's.
  const since = (at: string | undefined) => at !== undefined && Date.parse(at) >= Date.parse(last.placedAt);
  const ready = status.conditions?.find((condition) => condition.type === 'Ready');
  if (ready?.reason === FAILED_TO_START && since(ready.lastTransitionTime)) {
    return [...previous, attemptOf(last, 'FailedToStart', ready.lastTransitionTime)];
  }
  const preemptedAt = status.lastPreemptionTime;
  if (typeof preemptedAt !== 'string' || !since(preemptedAt)) return previous;
  return [...previous, attemptOf(last, 'Preempted', preemptedAt)];
}

/** The Ready reason of a placed resource whose object failed before it ran: it is placed again. */
export const FAILED_TO_START = 'FailedToStart';

/**
 * Whether the cloud refused a create because the offer has no room now: code 12002, which also proves
 * nothing was created (docs/design.md §placement says why this code, and what the simulator does).
 */
export function isNoCapacity(error: unknown): boolean {
  return error instanceof CloudApiError && error.code === ApiCode.NoCapacity;
}
