import type { Vm } from '../../api/schemas/vms.ts';
import type { Offer, Offers } from '../../managed/core/external-kind.ts';
import type { GpuVmSpec } from '../gpu-vm/schema.ts';
import { offersFrom, pickPrice, SPOT_VARIANTS } from './offers.ts';
import {
  type Candidate,
  decimal,
  type Price,
  type PriceBook,
  priceOf,
  type Unpriced,
  type VmTypeEntry,
} from './price-book.ts';

/** The fields of a GpuVm's spec its price depends on. */
export type VmPriceSpec = Pick<GpuVmSpec, 'vmTypeId' | 'region' | 'isSpot' | 'placement'>;

type VmPlacement = NonNullable<GpuVmSpec['placement']>;

/**
 * The offers a placed VM accepts, best first, from the VM types listing: a type of `gpuCount` GPUs of a
 * model it lists (any with `minGpuMemoryInGb` when it lists none) that the account allows, in one of its
 * regions, spot or on-demand as `spot` says, with room now (ondemandAvailable / spotAvailable), at or under
 * its cap per GPU-hour (the type's hourly price ÷ its GPUs). Ranked as a pod's offers are.
 */
export async function gpuVmOffers(
  book: PriceBook,
  placement: VmPlacement,
  allowed: (gpuType: string) => boolean,
): Promise<Offers> {
  const listed = placement.gpuTypes;
  const spots: readonly boolean[] = SPOT_VARIANTS[placement.spot ?? 'Never'];
  const cap = placement.maxPricePerGpuHour ?? Number.POSITIVE_INFINITY;
  const regions = placement.regions;
  const found = await book.vmTypes(
    ({ gpuType, region, item }) =>
      (listed === undefined || listed.includes(gpuType)) &&
      (regions === undefined || regions.includes(region)) &&
      item.gpuCount === placement.gpuCount &&
      Number(item.gpuMemoryInGb) >= (placement.minGpuMemoryInGb ?? 0),
  );
  const fitting = found.items.flatMap((entry) =>
    spots.flatMap((spot) =>
      vmCandidate(entry, spot).map((candidate) => ({
        offer: {
          gpuType: entry.gpuType,
          region: entry.region,
          spot,
          pricePerGpuHour: candidate.perHour / entry.item.gpuCount,
        },
        available: candidate.available,
      })),
    ),
  );

  const asked = `${placement.gpuCount} × (${listed?.join(', ') ?? `any GPU type with at least ${placement.minGpuMemoryInGb ?? 0} GB`}), spot ${placement.spot ?? 'Never'}${regions ? ` in ${regions.join(' or ')}` : ''}`;
  return offersFrom(
    fitting,
    allowed,
    cap,
    { order: placement.order, gpuTypes: listed, regions, spots },
    asked,
    found.asOf,
  );
}

/** The VM type a placed VM is created from: its placement's model and region at its GPU count. */
export async function placedVmType(
  book: PriceBook,
  placed: { gpuType: string; region: string },
  gpuCount: number,
): Promise<number | undefined> {
  const found = await book.vmTypes(
    ({ gpuType, region, item }) =>
      gpuType === placed.gpuType && region === placed.region && item.gpuCount === gpuCount,
  );
  return found.items[0]?.item.vmTypeId;
}

/** A VM type, its GPUs, and its price for a VM of this spec: what plan shows and the guardrails count. */
export interface VmQuote {
  readonly price: Price;
  /** The type's GPUs, when the listing has the type. */
  readonly gpus?: { readonly types: readonly string[]; readonly count: number } | undefined;
  /** A placed VM: the offer placement would pick now. */
  readonly placement?: Offer | undefined;
}

/**
 * What a VM of this spec would cost per hour if created now: its type's `pricePerHour` in its region, or
 * `spotPricePerHour` for a spot VM, from the VM types listing. The operator writes the VM's
 * `status.pricePerHour` from the same listing, so the price is what the VM shows once made (quoted).
 */
export async function gpuVmSpecQuote(book: PriceBook, spec: VmPriceSpec): Promise<VmQuote> {
  if (spec.placement) {
    const { offers, none, asOf } = await gpuVmOffers(book, spec.placement, () => true);
    const [pick] = offers;
    const count = spec.placement.gpuCount;
    if (!pick) return { price: noType(none) };
    return {
      gpus: { types: [pick.gpuType], count },
      price: pickPrice(pick, count, asOf),
      placement: pick,
    };
  }
  const found = await book.vmTypes(({ item }) => item.vmTypeId === spec.vmTypeId);
  const [first] = found.items;
  if (first === undefined) {
    return {
      price: noType(`VM type ${spec.vmTypeId} is not in the VM types listing: gpucloud vm-types lists them`),
    };
  }
  const gpus = { types: [first.gpuType], count: first.item.gpuCount };
  const here = found.items.filter((entry) => entry.region === spec.region);
  if (here.length === 0) {
    const regions = found.items.map((entry) => entry.region).join(', ');
    return {
      gpus,
      price: noType(`VM type ${spec.vmTypeId} is offered in ${regions}, not in ${spec.region}`),
    };
  }
  const isSpot = spec.isSpot ?? false;
  const candidates = here.flatMap((entry) => vmCandidate(entry, isSpot));
  const price = priceOf(candidates, 'vmTypes', found.asOf);
  if (price) return { gpus, price };
  return { gpus, price: noType(`VM type ${spec.vmTypeId} is not offered as spot in ${spec.region}`) };
}

/**
 * What a VM the cloud runs costs per hour. The VM object carries neither a price nor its type: the type is
 * found by what it does carry — region, GPU type and count, and CPU cores and memory where they tell types
 * apart — and priced from the VM types listing at today's price (quoted; a range when several types fit).
 */
export async function gpuVmCloudPrice(book: PriceBook, vm: Vm): Promise<Price> {
  const found = await book.vmTypes(
    ({ region, gpuType, item }) =>
      region === vm.region && gpuType === vm.gpuType && item.gpuCount === vm.gpuCount,
  );
  const sameShape = found.items.filter(
    ({ item }) => item.cpuCores === vm.cpuCores && item.memoryInGb === vm.memoryInGb,
  );
  const types = sameShape.length > 0 ? sameShape : found.items;
  // A running VM has its machine: the price stands whether the region has room for another or not.
  const candidates = types
    .flatMap((entry) => vmCandidate(entry, vm.isSpot))
    .map((each) => ({ ...each, available: true }));
  return (
    priceOf(candidates, 'vmTypes', found.asOf) ??
    noType(
      `no VM type of ${vm.gpuCount} × ${vm.gpuType}${vm.isSpot ? ' (spot)' : ''} in ${vm.region} to price VM ${vm.id} by: the VM object carries no price or type`,
    )
  );
}

function vmCandidate({ gpuType, region, item }: VmTypeEntry, isSpot: boolean): Candidate[] {
  const text = isSpot ? item.spotPricePerHour : item.pricePerHour;
  const perHour = decimal(text);
  if (perHour === undefined || (isSpot && !item.supportSpot)) return [];
  return [
    {
      perHour,
      currency: item.currency,
      basis: `VM type ${item.vmTypeId} (${gpuType} × ${item.gpuCount}) in ${region}: ${isSpot ? 'spotPricePerHour' : 'pricePerHour'} ${text}`,
      available: isSpot ? item.spotAvailable : item.ondemandAvailable,
    },
  ];
}

function noType(message: string): Unpriced {
  return { priced: false, reason: 'NoVmTypeMatches', message };
}
