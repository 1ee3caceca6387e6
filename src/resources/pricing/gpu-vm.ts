import type { Vm } from '../../api/schemas/vms.ts';
import type { GpuVmSpec } from '../gpu-vm/schema.ts';
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
export type VmPriceSpec = Pick<GpuVmSpec, 'vmTypeId' | 'region' | 'isSpot'>;

/** A VM type, its GPUs, and its price for a VM of this spec: what plan shows and the guardrails count. */
export interface VmQuote {
  readonly price: Price;
  /** The type's GPUs, when the listing has the type. */
  readonly gpus?: { readonly types: readonly string[]; readonly count: number } | undefined;
}

/**
 * What a VM of this spec would cost per hour if created now: its type's `pricePerHour` in its region, or
 * `spotPricePerHour` for a spot VM, from the VM types listing. The operator writes the VM's
 * `status.pricePerHour` from the same listing, so the price is what the VM shows once made (quoted).
 */
export async function gpuVmSpecQuote(book: PriceBook, spec: VmPriceSpec): Promise<VmQuote> {
  const found = await book.vmTypes(({ item }) => item.vmTypeId === spec.vmTypeId);
  const [any] = found.items;
  if (any === undefined) {
    return {
      price: noType(`VM type ${spec.vmTypeId} is not in the VM types listing: gpucloud vm-types lists them`),
    };
  }
  const gpus = { types: [any.gpuType], count: any.item.gpuCount };
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
