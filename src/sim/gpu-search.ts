import type { GpuCountOption, GpuSearchRequest, GpuSearchResult, GpuSpec } from '../api/schemas/index.ts';
import {
  CURRENCY,
  GPU_MODELS,
  type GpuModel,
  gpuCounts,
  MIN_CONTAINER_VOLUME_GB,
  usd,
  VOLUME_PRICE_PER_GB_HOUR,
} from './catalog.ts';
import type { SimContext } from './context.ts';
import type { Market } from './market.ts';
import { paginate } from './paging.ts';

const VENDOR = 'NVIDIA';

/** `POST /v2/gpu/list`: the machines on offer, one item per model, region and spot/on-demand. */
export function searchGpus(
  request: GpuSearchRequest,
  ctx: Pick<SimContext, 'capacity' | 'market'>,
): GpuSearchResult {
  const specs: GpuSpec[] = [];
  if ((request.acceleratorVendor ?? VENDOR) === VENDOR) {
    for (const model of GPU_MODELS.filter((candidate) => modelMatches(candidate, request))) {
      for (const region of model.regions) {
        if (request.regions?.length && !request.regions.includes(region)) continue;
        for (const isSpot of spotVariants(model, request.isSpot, ctx.market)) {
          const spec = gpuSpec(model, region, isSpot, request, ctx);
          if (
            spec.gpuCountOptions.length > 0 &&
            (request.includeUnavailable || spec.status === 'AVAILABLE')
          ) {
            specs.push(spec);
          }
        }
      }
    }
  }
  return paginate(specs, request.page, request.size);
}

function modelMatches(model: GpuModel, request: GpuSearchRequest): boolean {
  return (
    (!request.gpuTypes?.length || request.gpuTypes.includes(model.gpuType)) &&
    (!request.cloudTypes?.length || request.cloudTypes.includes(model.cloudType)) &&
    model.gpuMemoryInGb >= (request.minGpuMemoryInGb ?? 0) &&
    model.ramPerGpuInGb >= (request.minRamPerGpuInGb ?? 0) &&
    model.vcpuPerGpu >= (request.minVcpuPerGpu ?? 0)
  );
}

function spotVariants(model: GpuModel, isSpot: boolean | undefined, market: Market): boolean[] {
  const offered = market.spotOffered(model) ? [false, true] : [false];
  return isSpot === undefined ? offered : offered.filter((variant) => variant === isSpot);
}

function gpuSpec(
  model: GpuModel,
  region: string,
  isSpot: boolean,
  request: GpuSearchRequest,
  ctx: Pick<SimContext, 'capacity' | 'market'>,
): GpuSpec {
  const free = ctx.capacity.free(region, model.gpuType, isSpot);
  const perGpu = ctx.market.perGpuHour(model, isSpot);
  const options: GpuCountOption[] = gpuCounts(model)
    .filter((count) => !request.gpuCounts?.length || request.gpuCounts.includes(count))
    .map((count) => ({
      gpuCount: count,
      available: free >= count,
      totalGpuMemoryInGb: model.gpuMemoryInGb * count,
      totalRamInGb: model.ramPerGpuInGb * count,
      totalVcpu: model.vcpuPerGpu * count,
      totalLocalDiskInGb: model.localDiskPerGpuInGb * count,
      containerVolume: { minInGb: MIN_CONTAINER_VOLUME_GB, maxInGb: model.localDiskPerGpuInGb * count },
      price: {
        pricePerGpuPerHour: usd(perGpu),
        gpuPricePerHour: usd(perGpu * count),
        containerVolumePricePerGbPerHour: usd(VOLUME_PRICE_PER_GB_HOUR),
        currency: CURRENCY,
      },
    }))
    .filter((option) => {
      const volume = request.containerVolumeInGb;
      return (
        volume === undefined ||
        (volume >= option.containerVolume.minInGb && volume <= option.containerVolume.maxInGb)
      );
    });
  const availableGpuCounts = options.filter((option) => option.available).map((option) => option.gpuCount);
  return {
    gpuType: model.gpuType,
    displayName: model.displayName,
    gpuMemoryInGb: model.gpuMemoryInGb,
    region,
    cloudType: model.cloudType,
    acceleratorVendor: VENDOR,
    isSpot,
    status: availableGpuCounts.length > 0 ? 'AVAILABLE' : 'UNAVAILABLE',
    maxGpuCount: model.maxGpuCount,
    availableGpuCounts,
    ramPerGpuInGb: model.ramPerGpuInGb,
    vcpuPerGpu: model.vcpuPerGpu,
    localDiskPerGpuInGb: model.localDiskPerGpuInGb,
    gpuCountOptions: options,
  };
}
