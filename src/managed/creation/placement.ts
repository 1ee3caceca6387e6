import { ApiCode } from '../../api/codes.ts';
import { CloudApiError } from '../../api/errors.ts';
import type { Clock } from '../../lib/clock.ts';
import { readyReason } from '../core/conditions.ts';
import { ReconcileError } from '../core/errors.ts';
import type { ExternalKind, ManagedObject, Offer, PlacementSupport } from '../core/external-kind.ts';
import type { StatusContribution, StatusContributor } from '../core/status-contribution.ts';
import type { PlacementStatus } from '../core/status-schema.ts';

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

  /**
   * A placement for `mr`, after the attempts its status records and `tried` (this turn's, oldest first).
   * The status is the only memory: a restarted process or a new leader counts the same attempts.
   */
  async choose(mr: ManagedObject<Spec>, tried: readonly Attempt[]): Promise<PlacementStatus> {
    const { asOf, offers, none } = await this.#support.offers(mr.spec, this.#allowed);
    const attempts = [...(mr.status?.placement?.attempts ?? []), ...tried].slice(-MAX_ATTEMPTS_KEPT);
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
 * `placement` with its own loss recorded, once: written with the status that reports the loss, so that the
 * next placement rules the offer out whichever process makes it.
 */
export function withLoss(
  placement: PlacementStatus,
  outcome: Attempt['outcome'],
  now: number,
): PlacementStatus {
  const attempts = placement.attempts ?? [];
  const placedAt = Date.parse(placement.placedAt);
  const seen = attempts.some(
    (attempt) =>
      attempt.outcome === outcome && sameOffer(attempt, placement) && Date.parse(attempt.at) >= placedAt,
  );
  if (seen) return placement;
  const lost = attemptOf(placement, outcome, new Date(now).toISOString());
  return { ...placement, attempts: [...attempts, lost].slice(-MAX_ATTEMPTS_KEPT) };
}

/** The Ready reason of a placed resource whose object failed before it ran: it is placed again. */
export const FAILED_TO_START = 'FailedToStart';

/** The Ready reason of a placed resource whose object the cloud charges above its cap: it is placed again. */
export const ABOVE_CAP = 'AboveCap';

/**
 * What the cloud charges `cloud` per GPU-hour and the cap it exceeds, when it does. The API has no on-demand
 * `maxPrice`, and a price may rise between the offers' read and the create: the create's answer says what
 * is charged, and nothing may keep running above its cap.
 */
export function aboveCap<Spec, Cloud>(
  support: PlacementSupport<Spec, Cloud>,
  spec: Spec,
  cloud: Cloud,
): { charged: string; cap: number } | undefined {
  const cap = support.maxPricePerGpuHour(spec);
  const charged = support.charged(cloud);
  if (cap === undefined || charged === undefined) return undefined;
  // Prices are decimal strings of four places: a charge equal to the cap is within it.
  return Number(charged) > cap + 1e-9 ? { charged, cap } : undefined;
}

/**
 * Whether the cloud refused a create because the offer has no room now: code 12002, which also proves
 * nothing was created (docs/design.md §placement says why this code, and what the simulator does).
 */
export function isNoCapacity(error: unknown): boolean {
  return error instanceof CloudApiError && error.code === ApiCode.NoCapacity;
}

/**
 * Placement's part of a report: where the object was placed, with the price the cloud charges it once it
 * says, the loss of an object that failed to start or is charged above its cap, and what Ready says then.
 */
export function placementReport<Spec, Cloud>(
  kind: string,
  adapter: Pick<ExternalKind<Spec, Cloud>, 'idOf' | 'placement'>,
  lost: string | undefined,
): StatusContributor<Spec, Cloud> {
  return ({ mr, cloud, phase, now }) => {
    const support = adapter.placement;
    const recorded = mr.status?.placement;
    const charged = support?.charged(cloud);
    let placement =
      recorded && charged !== undefined ? { ...recorded, chargedPerGpuHour: charged } : recorded;
    const outcome = LOSSES[lost ?? ''];
    if (placement && outcome) placement = withLoss(placement, outcome, now);
    const fields = { placement };
    if (lost === FAILED_TO_START) {
      const message = `${kind} ${adapter.idOf(cloud)} failed before it ran (${phase}); deleting it and placing the resource again`;
      return replaced(fields, mr, FAILED_TO_START, message);
    }
    if (lost === ABOVE_CAP) {
      const over = support && aboveCap(support, mr.spec, cloud);
      const message = `${kind} ${adapter.idOf(cloud)} is charged ${over?.charged} USD/GPU-hour, above maxPricePerGpuHour ${over?.cap}; deleting it and placing the resource again`;
      return replaced(fields, mr, ABOVE_CAP, message);
    }
    return { fields };
  };
}

/** The attempt outcome each loss is recorded as. */
const LOSSES: Readonly<Record<string, Attempt['outcome']>> = {
  Preempted: 'Preempted',
  [FAILED_TO_START]: 'FailedToStart',
  [ABOVE_CAP]: 'AboveCap',
};

/** An object deleted to place the resource again: Ready says why, with a Warning when that is new. */
function replaced(
  fields: StatusContribution['fields'],
  mr: ManagedObject<unknown>,
  reason: string,
  message: string,
): StatusContribution {
  return {
    fields,
    loss: { ready: false, reason, message },
    warnings: readyReason(mr.status) === reason ? [] : [{ reason, message }],
  };
}
