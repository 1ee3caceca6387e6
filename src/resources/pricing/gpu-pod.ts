import type { GpuCountOption, GpuSpec } from '../../api/schemas/gpus.ts';
import type { Offer, Offers } from '../../managed/core/external-kind.ts';
import type { PodView } from '../gpu-pod/details.ts';
import type { GpuPodSpec } from '../gpu-pod/schema.ts';
import { offersFrom, pickPrice, SPOT_VARIANTS } from './offers.ts';
import { type Candidate, decimal, exactPrice, type Price, type PriceBook, priceOf } from './price-book.ts';

/** The fields of a GpuPod's spec its price depends on. */
type PodPriceSpec = Pick<
  GpuPodSpec,
  | 'gpuType'
  | 'gpuCount'
  | 'regions'
  | 'isSpot'
  | 'maxPrice'
  | 'resourceType'
  | 'minSingleCardRamInGb'
  | 'minSingleCardVramInGb'
  | 'minSingleCardVcpu'
  | 'containerVolumeInGb'
>;

/**
 * What a pod of this spec would cost per hour if created now: the GPU offers it could be placed on — its
 * GPU type, spot or on-demand as asked (on-demand when unset), in one of its regions (any when none),
 * with an option of its GPU count, the per-card minimums and the container volume it asks for, at or
 * under its `maxPrice` — each at `pricePerGpuPerHour × gpuCount`. The cloud reports that per-GPU price as
 * the pod's `singleCardPrice`, so the price is what the pod shows once made (`singleCardPrice × gpuCount`).
 * GPU hours only: the container volume is billed per GB-hour apart (as `gpucloud cost` and the fleet
 * metrics count a pod).
 */
export async function gpuPodSpecPrice(book: PriceBook, spec: PodPlacementSpec): Promise<Price> {
  if (spec.resourceType === 'CPU') return notQuoted();
  if (spec.placement) return (await gpuPodPick(book, spec)).price;
  const isSpot = spec.isSpot ?? false;
  const regions = spec.regions?.length ? new Set(spec.regions) : undefined;
  const found = await book.offers(
    (offer) =>
      offer.gpuType === spec.gpuType &&
      offer.isSpot === isSpot &&
      (regions === undefined || regions.has(offer.region)) &&
      offer.gpuMemoryInGb >= (spec.minSingleCardVramInGb ?? 0) &&
      offer.ramPerGpuInGb >= (spec.minSingleCardRamInGb ?? 0) &&
      offer.vcpuPerGpu >= (spec.minSingleCardVcpu ?? 0) &&
      offer.gpuCountOptions.some((option) => fits(option, spec)),
  );
  const candidates = found.items.flatMap((offer) =>
    offer.gpuCountOptions.filter((option) => fits(option, spec)).map((option) => candidate(offer, option)),
  );
  const within =
    spec.maxPrice === undefined
      ? candidates
      : candidates.filter((each) => each.perHour <= (spec.maxPrice ?? Number.POSITIVE_INFINITY));
  const price = priceOf(within, 'offers', found.asOf);
  if (price) return price;
  const asked =
    `${spec.gpuCount} × ${spec.gpuType}, ${isSpot ? 'spot' : 'on-demand'}` +
    (regions ? ` in ${[...regions].join(' or ')}` : '');
  const message =
    candidates.length > 0
      ? `every offer of ${asked} costs more than its maxPrice of ${spec.maxPrice} USD/hour (the lowest is ${Math.min(...candidates.map((each) => each.perHour))})`
      : `no GPU offer matches ${asked}${minimums(spec)}: gpucloud offers lists what the cloud rents`;
  return { priced: false, reason: 'NoOfferMatches', message };
}

/**
 * What a pod the cloud runs costs per hour: its own `singleCardPrice × gpuCount` when the view carries it
 * (a get does; exact), else — pod lists carry no price — the offer of its GPU type, region, cloud type,
 * spot or not and GPU count, at today's price (quoted; a range if several offers fit). Priced as it runs,
 * whatever its status: whether it counts towards a spend rate is what it holds (pricing.ts).
 */
export async function gpuPodCloudPrice(book: PriceBook, pod: PodView): Promise<Price> {
  const ownPrice = decimal(pod.singleCardPrice);
  if (ownPrice !== undefined) {
    return exactPrice(
      ownPrice * pod.gpuCount,
      `singleCardPrice ${pod.singleCardPrice} × ${pod.gpuCount} GPUs`,
    );
  }
  if (pod.resourceType === 'CPU') return notQuoted();
  const found = await book.offers(
    (offer) =>
      offer.gpuType === pod.gpuType &&
      offer.region === pod.region &&
      offer.isSpot === pod.isSpot &&
      offer.cloudType === pod.cloudType,
  );
  const candidates = found.items.flatMap((offer) =>
    offer.gpuCountOptions
      .filter((option) => option.gpuCount === pod.gpuCount)
      // A running pod has its machine: the price stands whether the pool has room for another or not.
      .map((option) => ({ ...candidate(offer, option), available: true })),
  );
  return (
    priceOf(candidates, 'offers', found.asOf) ?? {
      priced: false,
      reason: 'NoOfferMatches',
      message: `no GPU offer of ${pod.gpuCount} × ${pod.gpuType} (${pod.isSpot ? 'spot' : 'on-demand'}, ${pod.cloudType}) in ${pod.region} to price pod ${pod.id} by: its list entry carries no price`,
    }
  );
}

/** The fields of a GpuPod's spec its price and placement read. */
export type PodPlacementSpec = PodPriceSpec & Pick<GpuPodSpec, 'placement'>;

/**
 * The offer placement would pick for a pod of this spec now, with any GPU type allowed (the account's
 * allow-list narrows it further), and its price: `quoted`, the offer's price × gpuCount.
 */
export async function gpuPodPick(
  book: PriceBook,
  spec: PodPlacementSpec,
): Promise<{ offer: Offer | undefined; price: Price }> {
  const { offers, none, asOf } = await gpuPodOffers(book, spec, () => true);
  const [offer] = offers;
  if (offer === undefined)
    return { offer, price: { priced: false, reason: 'NoOfferMatches', message: none } };
  return { offer, price: pickPrice(offer, spec.gpuCount, asOf) };
}

/**
 * The offers a placed pod accepts, best first: a GPU type it lists (any, with `minSingleCardVramInGb`,
 * when it lists none) that the account allows, spot or on-demand as `placement.spot` says, in one of its
 * regions, with room for its GPU count now, its per-card minimums and container volume, at or under its
 * price cap per GPU-hour. Spot `Preferred` puts every spot offer first. Within that, `order: Cheapest` (the
 * default) sorts by price, then by the order of `gpuTypes` and `regions`; `Listed` by `gpuTypes` first.
 */
export async function gpuPodOffers(
  book: PriceBook,
  spec: PodPlacementSpec,
  allowed: (gpuType: string) => boolean,
): Promise<Offers> {
  const placement = spec.placement ?? {};
  const listed = placement.gpuTypes;
  const spots: readonly boolean[] = SPOT_VARIANTS[placement.spot ?? 'Never'];
  const cap = placement.maxPricePerGpuHour ?? Number.POSITIVE_INFINITY;
  const regions = spec.regions?.length ? spec.regions : undefined;
  const found = await book.offers(
    (offer) =>
      (listed === undefined || listed.includes(offer.gpuType)) &&
      spots.includes(offer.isSpot) &&
      (regions === undefined || regions.includes(offer.region)) &&
      offer.gpuMemoryInGb >= (spec.minSingleCardVramInGb ?? 0) &&
      offer.ramPerGpuInGb >= (spec.minSingleCardRamInGb ?? 0) &&
      offer.vcpuPerGpu >= (spec.minSingleCardVcpu ?? 0) &&
      offer.gpuCountOptions.some((option) => fits(option, spec)),
  );
  const fitting = found.items.flatMap((offer) =>
    offer.gpuCountOptions
      .filter((option) => fits(option, spec))
      .map((option) => ({
        offer: {
          gpuType: offer.gpuType,
          region: offer.region,
          spot: offer.isSpot,
          pricePerGpuHour: Number(option.price.pricePerGpuPerHour),
        },
        available: option.available,
      })),
  );

  const types = listed?.join(', ') ?? `any GPU type with at least ${spec.minSingleCardVramInGb ?? 0} GB`;
  const asked = `${spec.gpuCount} × (${types}), spot ${placement.spot ?? 'Never'}${regions ? ` in ${regions.join(' or ')}` : ''}${minimums(spec)}`;
  return offersFrom(
    fitting,
    allowed,
    cap,
    { order: placement.order, gpuTypes: listed, regions, spots },
    asked,
    found.asOf,
  );
}

function fits(option: GpuCountOption, spec: PodPriceSpec): boolean {
  const volume = spec.containerVolumeInGb;
  return (
    option.gpuCount === spec.gpuCount &&
    (volume === undefined ||
      (volume >= option.containerVolume.minInGb && volume <= option.containerVolume.maxInGb))
  );
}

function candidate(offer: GpuSpec, option: GpuCountOption): Candidate {
  const perGpu = Number(option.price.pricePerGpuPerHour);
  const kind = offer.isSpot ? 'spot' : 'on-demand';
  return {
    perHour: perGpu * option.gpuCount,
    currency: option.price.currency,
    basis: `offer ${offer.gpuType} ${kind} ${offer.cloudType} in ${offer.region}: ${option.price.pricePerGpuPerHour}/GPU-hour × ${option.gpuCount}`,
    available: option.available,
  };
}

function minimums(spec: PodPriceSpec): string {
  const asked = [
    spec.minSingleCardVramInGb === undefined ? '' : `${spec.minSingleCardVramInGb} GB VRAM`,
    spec.minSingleCardRamInGb === undefined ? '' : `${spec.minSingleCardRamInGb} GB RAM`,
    spec.minSingleCardVcpu === undefined ? '' : `${spec.minSingleCardVcpu} vCPUs`,
  ].filter(Boolean);
  const volume =
    spec.containerVolumeInGb === undefined ? '' : `, a ${spec.containerVolumeInGb} GB container volume`;
  return `${asked.length ? ` with at least ${asked.join(', ')} per card` : ''}${volume}`;
}

function notQuoted(): Price {
  return {
    priced: false,
    reason: 'NotQuoted',
    message: 'a CPU pod has no price before it exists: the GPU search lists GPU machines only',
  };
}
