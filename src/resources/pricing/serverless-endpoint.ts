import type { Endpoint } from '../../api/schemas/serverless.ts';
import type { ServerlessEndpointSpec } from '../serverless-endpoint/schema.ts';
import {
  type Candidate,
  decimal,
  exactPrice,
  type Price,
  type PriceBook,
  priceOf,
  times,
} from './price-book.ts';

/** The fields of a ServerlessEndpoint's spec its price depends on. */
export type EndpointPriceSpec = Pick<
  ServerlessEndpointSpec,
  | 'resources'
  | 'workers'
  | 'autoscaling'
  | 'minSingleCardVramInGb'
  | 'minSingleCardRamInGb'
  | 'minSingleCardVcpu'
>;

/**
 * What an endpoint of this spec would cost per hour if created now: its workers times a worker's price. A
 * worker runs on one of its resources (a region, GPU type and count), on-demand (the create request has no
 * spot), at that GPU offer's `pricePerGpuPerHour × gpuCount`; with several resources of different prices
 * the price is a range up to the dearest. The workers are those it starts with (`workers`, else
 * `autoscaling.minWorkers`, else 1); an autoscaled endpoint has `maxPerHour` at `maxWorkers`, what the
 * guardrails weigh it at. The cloud reports the endpoint's own `perHourPrice` once it exists.
 */
export async function serverlessEndpointSpecPrice(book: PriceBook, spec: EndpointPriceSpec): Promise<Price> {
  const perWorker: Candidate[] = [];
  let asOf = Number.POSITIVE_INFINITY;
  for (const resource of spec.resources) {
    const found = await book.offers(
      (offer) =>
        offer.gpuType === resource.gpuType &&
        offer.region === resource.region &&
        !offer.isSpot &&
        offer.gpuMemoryInGb >= (spec.minSingleCardVramInGb ?? 0) &&
        offer.ramPerGpuInGb >= (spec.minSingleCardRamInGb ?? 0) &&
        offer.vcpuPerGpu >= (spec.minSingleCardVcpu ?? 0),
    );
    asOf = Math.min(asOf, found.asOf);
    const options = found.items.flatMap((offer) =>
      offer.gpuCountOptions
        .filter((option) => option.gpuCount === resource.gpuCount)
        .map((option) => ({
          perHour: Number(option.price.pricePerGpuPerHour) * option.gpuCount,
          currency: option.price.currency,
          basis: `offer ${offer.gpuType} on-demand ${offer.cloudType} in ${offer.region}: ${option.price.pricePerGpuPerHour}/GPU-hour × ${option.gpuCount} per worker`,
          available: option.available,
        })),
    );
    if (options.length === 0) {
      return {
        priced: false,
        reason: 'NoOfferMatches',
        message: `no on-demand GPU offer matches a worker of ${resource.gpuCount} × ${resource.gpuType} in ${resource.region}: gpucloud offers --on-demand lists what the cloud rents`,
      };
    }
    perWorker.push(...options);
  }
  const worker = priceOf(perWorker, 'offers', asOf);
  if (!worker) {
    return {
      priced: false,
      reason: 'NoOfferMatches',
      message: 'the endpoint names no resource to run workers on',
    };
  }
  const workers = spec.workers ?? spec.autoscaling?.minWorkers ?? 1;
  const price = times(worker, workers);
  const basis = `${workers} worker${workers === 1 ? '' : 's'} × ${worker.basis}`;
  const most = spec.autoscaling?.maxWorkers;
  return { ...price, basis, ...(most === undefined ? {} : { maxPerHour: worker.perHour * most }) };
}

/** What an endpoint the cloud runs costs per hour: its own `perHourPrice` (exact), which lists carry. */
export function serverlessEndpointCloudPrice(endpoint: Endpoint): Price {
  const perHour = decimal(endpoint.perHourPrice);
  if (perHour !== undefined) return exactPrice(perHour, `perHourPrice ${endpoint.perHourPrice}`);
  return {
    priced: false,
    reason: 'NotQuoted',
    message: `endpoint ${endpoint.id} reports no perHourPrice ("${endpoint.perHourPrice}")`,
  };
}
