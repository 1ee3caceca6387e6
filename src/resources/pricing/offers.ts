import type { Offer, Offers } from '../../managed/core/external-kind.ts';
import { describeOffer } from '../../managed/creation/placement.ts';

// For the console, which sees placement only through the kinds.
export type { Offer };
export { describeOffer };

import type { Priced } from './price-book.ts';

// What every kind's placement shares once its offers are read (pods from the GPU search, VMs from the
// VM types listing): the spot variants asked, the ranking, the price of the pick, and why nothing fits.

/** Spot choice → the spot variants placement looks at, in the order it tries them. */
export const SPOT_VARIANTS = { Never: [false], Preferred: [true, false], Required: [true] } as const;

export type SpotChoice = keyof typeof SPOT_VARIANTS;

export interface Ranking {
  readonly order?: 'Cheapest' | 'Listed' | undefined;
  readonly gpuTypes?: readonly string[] | undefined;
  readonly regions?: readonly string[] | undefined;
  readonly spots: readonly boolean[];
}

/** An offer that fits what was asked, and whether it has room now. */
export interface Fitting {
  readonly offer: Offer;
  readonly available: boolean;
}

/**
 * The offers placement chooses from, out of those that fit: of a type the account allows, with room now,
 * at or under the cap, best first; and, for when none is left, why, in the words of what was `asked`.
 */
export function offersFrom(
  fitting: readonly Fitting[],
  allowed: (gpuType: string) => boolean,
  cap: number,
  ranking: Ranking,
  asked: string,
  asOf: number,
): Offers {
  const allowedOnes = fitting.filter(({ offer }) => allowed(offer.gpuType));
  const open = allowedOnes.filter(({ available }) => available).map(({ offer }) => offer);
  return {
    asOf,
    offers: rankOffers(
      open.filter((offer) => offer.pricePerGpuHour <= cap),
      ranking,
    ),
    none: noOfferReason(asked, fitting.length, allowedOnes.length, open, cap),
  };
}

/**
 * Offers best first: spot before on-demand when spot is preferred; then, for `Cheapest` (the default), by
 * price, the order of `gpuTypes`, the order of `regions`; for `Listed`, by `gpuTypes` first, then price.
 */
function rankOffers(offers: readonly Offer[], ranking: Ranking): Offer[] {
  const rank = (offer: Offer): number[] => {
    const type = ranking.gpuTypes ? ranking.gpuTypes.indexOf(offer.gpuType) : 0;
    const region = ranking.regions ? ranking.regions.indexOf(offer.region) : 0;
    const spot = ranking.spots.indexOf(offer.spot);
    return ranking.order === 'Listed'
      ? [spot, type, offer.pricePerGpuHour, region]
      : [spot, offer.pricePerGpuHour, type, region];
  };
  return offers.toSorted((a, b) => compareRanks(rank(a), rank(b)));
}

function compareRanks(a: readonly number[], b: readonly number[]): number {
  for (let i = 0; i < a.length; i++) {
    const difference = (a[i] ?? 0) - (b[i] ?? 0);
    if (difference !== 0) return difference;
  }
  return 0;
}

/**
 * Why no offer is left for what was `asked`, from how many offers fit it, how many of those the account
 * allows, and those with room: the words of the NoOfferWithinPrice condition.
 */
function noOfferReason(
  asked: string,
  fitting: number,
  allowed: number,
  open: readonly Offer[],
  cap: number,
): string {
  if (fitting === 0)
    return `no offer matches ${asked}: gpucloud offers and gpucloud vm-types list what the cloud rents`;
  if (allowed === 0) return `no offer of ${asked} is of a GPU type the provider config allows`;
  if (open.length === 0) return `every offer of ${asked} is full now`;
  const cheapest = Math.min(...open.map((offer) => offer.pricePerGpuHour));
  return `no offer of ${asked} is within maxPricePerGpuHour ${cap} USD (the cheapest with room is ${cheapest})`;
}

/** The price of what placement would pick: the offer's price per GPU-hour × the GPUs, quoted. */
export function pickPrice(offer: Offer, gpus: number, asOf: number): Priced {
  const perHour = offer.pricePerGpuHour * gpus;
  return {
    priced: true,
    perHour,
    lowestPerHour: perHour,
    currency: 'USD',
    source: 'offers',
    exactness: 'quoted',
    basis: `placement's pick, ${describeOffer(offer)} × ${gpus}`,
    asOf,
    available: true,
  };
}
