import type { Capacity, Reservation } from '../capacity.ts';
import {
  CPU_MODEL,
  DEFAULT_CONTAINER_VOLUME_GB,
  findModel,
  type GpuModel,
  MIN_CONTAINER_VOLUME_GB,
  REGIONS,
  usd,
} from '../catalog.ts';
import { invalid, noCapacity } from '../errors.ts';
import type { Market } from '../market.ts';
import type { PodSpec } from './pod.ts';

export interface Placement {
  readonly model: GpuModel;
  readonly region: string;
  readonly containerVolumeInGb: number;
  readonly reservation: Reservation | undefined;
  /** USD per GPU-hour at creation: what the pod is charged (its singleCardPrice) for its life. */
  readonly pricePerGpuHour: number;
}

/**
 * Finds a machine for a pod: the GPU model, a region among the acceptable ones, and free GPUs
 * there. A request no machine could ever satisfy is invalid (10001); one that only lacks free GPUs
 * now is refused with the retryable 12002.
 */
export function placePod(spec: PodSpec, capacity: Capacity, market: Market): Placement {
  const model = spec.resourceType === 'CPU' ? CPU_MODEL : modelFor(spec.gpuType);
  checkFits(spec, model, market);
  const regions = candidateRegions(spec, model);
  const containerVolumeInGb = containerVolume(spec, model);
  const pricePerGpuHour = market.perGpuHour(model, spec.isSpot);
  if (spec.resourceType === 'CPU')
    return {
      model,
      region: regions[0] as string,
      containerVolumeInGb,
      reservation: undefined,
      pricePerGpuHour,
    };
  checkPrice(spec, model, market);
  const reservation = capacity.reserveInAny(regions, model.gpuType, spec.gpuCount, spec.isSpot);
  if (reservation === undefined) {
    throw noCapacity(`${spec.gpuCount} × ${model.gpuType} in ${regions.join(', ')}`);
  }
  return { model, region: reservation.region, containerVolumeInGb, reservation, pricePerGpuHour };
}

function modelFor(gpuType: string): GpuModel {
  const model = findModel(gpuType);
  if (model === undefined) {
    throw invalid(
      `body.gpuType: "${gpuType}" is not a GPU type this service offers; POST /v2/gpu/list lists them`,
    );
  }
  return model;
}

function checkFits(spec: PodSpec, model: GpuModel, market: Market): void {
  if (spec.gpuCount > model.maxGpuCount) {
    throw invalid(`body.gpuCount: ${model.gpuType} machines have at most ${model.maxGpuCount} GPUs`);
  }
  const minimums: Array<[string, number | undefined, number]> = [
    ['minSingleCardVramInGb', spec.minSingleCardVramInGb, model.gpuMemoryInGb],
    ['minSingleCardRamInGb', spec.minSingleCardRamInGb, model.ramPerGpuInGb],
    ['minSingleCardVcpu', spec.minSingleCardVcpu, model.vcpuPerGpu],
  ];
  for (const [field, wanted, offered] of minimums) {
    if (wanted !== undefined && wanted > offered) {
      throw invalid(
        `body.${field}: ${model.gpuType} offers ${offered} per card, less than the ${wanted} asked`,
      );
    }
  }
  if (spec.isSpot && !market.spotOffered(model)) {
    throw invalid(`body.isSpot: ${model.gpuType} is not offered as spot; set isSpot to false`);
  }
}

function candidateRegions(spec: PodSpec, model: GpuModel): string[] {
  const unknown = spec.regions.filter((region) => !(REGIONS as readonly string[]).includes(region));
  if (unknown.length > 0)
    throw invalid(`body.regions: unknown region ${unknown.join(', ')}; regions are ${REGIONS.join(', ')}`);
  if (spec.regions.length === 0) return [...model.regions];
  const offered = spec.regions.filter((region) => model.regions.includes(region));
  if (offered.length === 0) {
    throw invalid(`body.regions: ${model.gpuType} is offered only in ${model.regions.join(', ')}`);
  }
  return offered;
}

function containerVolume(spec: PodSpec, model: GpuModel): number {
  const max = model.localDiskPerGpuInGb * spec.gpuCount;
  const size = spec.containerVolumeInGb ?? Math.min(DEFAULT_CONTAINER_VOLUME_GB, max);
  if (size < MIN_CONTAINER_VOLUME_GB || size > max) {
    throw invalid(
      `body.containerVolumeInGb: must be between ${MIN_CONTAINER_VOLUME_GB} and ${max} GB for this machine`,
    );
  }
  return size;
}

function checkPrice(spec: PodSpec, model: GpuModel, market: Market): void {
  if (spec.maxPrice === undefined) return;
  const price = market.hourly(model, spec.gpuCount, true);
  if (price > spec.maxPrice) {
    throw noCapacity(
      `spot ${model.gpuType} × ${spec.gpuCount} at ${usd(spec.maxPrice)} USD/hour (now ${usd(price)})`,
    );
  }
}
