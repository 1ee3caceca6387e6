import type { Endpoint } from '../../api/schemas/serverless.ts';
import type { Vm } from '../../api/schemas/vms.ts';
import type { Offer } from '../../managed/core/external-kind.ts';
import type { PodView } from '../gpu-pod/details.ts';
import { podHeldGpus } from '../gpu-pod/gpus.ts';
import type { GpuPodSpec } from '../gpu-pod/schema.ts';
import { vmHeldGpus } from '../gpu-vm/gpus.ts';
import type { GpuVmSpec } from '../gpu-vm/schema.ts';
import { endpointHeldGpus, gpusPerWorker } from '../serverless-endpoint/gpus.ts';
import type { ServerlessEndpointSpec } from '../serverless-endpoint/schema.ts';
import { gpuPodCloudPrice, gpuPodPick, gpuPodSpecPrice } from './gpu-pod.ts';
import { gpuVmCloudPrice, gpuVmSpecQuote } from './gpu-vm.ts';
import type { Price, PriceBook, Priced } from './price-book.ts';
import { serverlessEndpointCloudPrice, serverlessEndpointSpecPrice } from './serverless-endpoint.ts';

/** A cloud object of a GPU-holding kind, as the kind's list (or get) shows it. */
export type CloudObject =
  | { readonly kind: 'GpuPod'; readonly object: PodView }
  | { readonly kind: 'GpuVm'; readonly object: Vm }
  | { readonly kind: 'ServerlessEndpoint'; readonly object: Endpoint };

/** The GPUs an object holds now, as the account's live-GPU limit counts them: its kind adapter's `heldGpus`. */
export function heldGpusOf({ kind, object }: CloudObject): number {
  switch (kind) {
    case 'GpuPod':
      return podHeldGpus(object);
    case 'GpuVm':
      return vmHeldGpus(object);
    case 'ServerlessEndpoint':
      return endpointHeldGpus(object);
  }
}

/** What a cloud object costs per hour while it runs, from its own price or the lists (the kind's price file). */
export function cloudObjectPrice(book: PriceBook, { kind, object }: CloudObject): Promise<Price> {
  switch (kind) {
    case 'GpuPod':
      return gpuPodCloudPrice(book, object);
    case 'GpuVm':
      return gpuVmCloudPrice(book, object);
    case 'ServerlessEndpoint':
      return Promise.resolve(serverlessEndpointCloudPrice(object));
  }
}

/** An object the spend rate could not price, and why. */
export interface UnpricedObject {
  readonly kind: CloudObject['kind'];
  readonly id: string;
  readonly message: string;
}

/** What a set of running objects costs per hour. */
export interface SpendRate {
  /** Per hour, at the highest price each could be charged. */
  readonly perHour: number;
  /** Per hour, at the lowest. */
  readonly lowestPerHour: number;
  /** Objects that hold GPUs now: those counted, priced or not. */
  readonly counted: number;
  /** Counted objects with no price: the rate leaves them out, so it is a lower bound while there are any. */
  readonly unpriced: readonly UnpricedObject[];
  /** Whether every counted price is the object's own (`exact`), not read from today's lists. */
  readonly exact: boolean;
}

/**
 * The spend rate of `objects`: the hourly prices of those that hold GPUs now, as the live-GPU limit
 * counts them (paused pods, stopped VMs and endpoints, and CPU pods count nothing). One price book, so
 * a thousand objects cost at most one GPU search and one VM types call.
 */
export async function spendRate(book: PriceBook, objects: Iterable<CloudObject>): Promise<SpendRate> {
  const live = [...objects].filter((object) => heldGpusOf(object) > 0);
  const prices = await Promise.all(live.map((object) => cloudObjectPrice(book, object)));
  let perHour = 0;
  let lowestPerHour = 0;
  let exact = true;
  const unpriced: UnpricedObject[] = [];
  prices.forEach((price, index) => {
    const object = live[index] as CloudObject;
    if (!price.priced) {
      unpriced.push({ kind: object.kind, id: object.object.id, message: price.message });
      return;
    }
    perHour += price.perHour;
    lowestPerHour += price.lowestPerHour;
    exact &&= price.exactness === 'exact';
  });
  return { perHour, lowestPerHour, counted: live.length, unpriced, exact };
}

/** A resource's spec, of a GPU-holding kind. */
export type PlannedSpec =
  | { readonly kind: 'GpuPod'; readonly spec: GpuPodSpec }
  | { readonly kind: 'GpuVm'; readonly spec: GpuVmSpec }
  | { readonly kind: 'ServerlessEndpoint'; readonly spec: ServerlessEndpointSpec };

/** What a spec would hold and cost if created now. */
export interface Estimate {
  readonly price: Price;
  /**
   * The GPU types it may run on and the GPUs it holds while live, as the guardrails weigh it (the adapter's
   * `demand`): none for a CPU pod, or a VM whose type the listing lacks.
   */
  readonly gpus?: { readonly types: readonly string[]; readonly count: number } | undefined;
  /** Whether the spec asks for the object to run (not paused or stopped): the cloud runs what it creates anyway. */
  readonly live: boolean;
  /** A spec that leaves the choice to the operator: the offer placement would pick now. */
  readonly placement?: Offer | undefined;
}

/** What `planned` would hold and cost per hour if created now, at today's offers and VM types. */
export async function estimateSpec(book: PriceBook, planned: PlannedSpec): Promise<Estimate> {
  switch (planned.kind) {
    case 'GpuPod': {
      const { spec } = planned;
      if (spec.placement) {
        const { offer, price } = await gpuPodPick(book, spec);
        const types = offer ? [offer.gpuType] : (spec.placement.gpuTypes ?? []);
        return { price, gpus: { types, count: spec.gpuCount }, live: !spec.paused, placement: offer };
      }
      return {
        price: await gpuPodSpecPrice(book, spec),
        gpus:
          spec.resourceType === 'CPU' || spec.gpuType === undefined
            ? undefined
            : { types: [spec.gpuType], count: spec.gpuCount },
        live: !spec.paused,
      };
    }
    case 'GpuVm': {
      const quote = await gpuVmSpecQuote(book, planned.spec);
      return { price: quote.price, gpus: quote.gpus, live: true, placement: quote.placement };
    }
    case 'ServerlessEndpoint': {
      const { spec } = planned;
      const workers = spec.workers ?? spec.autoscaling?.maxWorkers ?? 1;
      return {
        price: await serverlessEndpointSpecPrice(book, spec),
        gpus: {
          types: spec.resources.map((resource) => resource.gpuType),
          count: workers * gpusPerWorker(spec.resources),
        },
        live: !spec.stopped,
      };
    }
  }
}

/**
 * What a price weighs against a budget: its highest, and an autoscaled endpoint at its most workers (as
 * the guardrails weigh its GPUs).
 */
export function budgetWeight(price: Priced): number {
  return price.maxPerHour ?? price.perHour;
}
