/**
 * What the simulated cloud rents out: GPU models, where they are offered and at what price. VM
 * types, the GPU machine spec search and pod/endpoint pricing are all derived from this table.
 */
export interface GpuModel {
  readonly gpuType: string;
  readonly displayName: string;
  readonly gpuMemoryInGb: number;
  readonly ramPerGpuInGb: number;
  readonly vcpuPerGpu: number;
  readonly localDiskPerGpuInGb: number;
  /** On-demand USD per GPU per hour when the simulation starts (market.ts changes it at run time). */
  readonly pricePerGpuPerHour: number;
  /** Spot USD per GPU per hour; absent when the model is not offered as spot. */
  readonly spotPricePerGpuPerHour?: number;
  readonly maxGpuCount: number;
  readonly cloudType: 'SECURE' | 'COMMUNITY';
  readonly regions: readonly string[];
}

export const REGIONS = ['us-east-1', 'eu-west-1', 'ap-southeast-1'] as const;

export const GPU_MODELS: readonly GpuModel[] = [
  {
    gpuType: 'NVIDIA H100 80GB HBM3',
    displayName: 'H100 SXM 80GB',
    gpuMemoryInGb: 80,
    ramPerGpuInGb: 125,
    vcpuPerGpu: 20,
    localDiskPerGpuInGb: 400,
    pricePerGpuPerHour: 2.99,
    spotPricePerGpuPerHour: 1.79,
    maxGpuCount: 8,
    cloudType: 'SECURE',
    regions: ['us-east-1', 'eu-west-1'],
  },
  {
    gpuType: 'NVIDIA A100-SXM4-80GB',
    displayName: 'A100 SXM 80GB',
    gpuMemoryInGb: 80,
    ramPerGpuInGb: 117,
    vcpuPerGpu: 16,
    localDiskPerGpuInGb: 200,
    pricePerGpuPerHour: 1.89,
    spotPricePerGpuPerHour: 1.09,
    maxGpuCount: 8,
    cloudType: 'SECURE',
    regions: ['us-east-1', 'eu-west-1', 'ap-southeast-1'],
  },
  {
    gpuType: 'NVIDIA L40S',
    displayName: 'L40S 48GB',
    gpuMemoryInGb: 48,
    ramPerGpuInGb: 62,
    vcpuPerGpu: 12,
    localDiskPerGpuInGb: 200,
    pricePerGpuPerHour: 0.99,
    spotPricePerGpuPerHour: 0.59,
    maxGpuCount: 8,
    cloudType: 'SECURE',
    regions: ['us-east-1', 'ap-southeast-1'],
  },
  {
    gpuType: 'NVIDIA GeForce RTX 4090',
    displayName: 'RTX 4090 24GB',
    gpuMemoryInGb: 24,
    ramPerGpuInGb: 41,
    vcpuPerGpu: 8,
    localDiskPerGpuInGb: 100,
    pricePerGpuPerHour: 0.69,
    spotPricePerGpuPerHour: 0.35,
    maxGpuCount: 8,
    cloudType: 'COMMUNITY',
    regions: ['us-east-1', 'eu-west-1', 'ap-southeast-1'],
  },
  {
    gpuType: 'NVIDIA RTX A6000',
    displayName: 'RTX A6000 48GB',
    gpuMemoryInGb: 48,
    ramPerGpuInGb: 50,
    vcpuPerGpu: 8,
    localDiskPerGpuInGb: 100,
    pricePerGpuPerHour: 0.79,
    maxGpuCount: 4,
    cloudType: 'COMMUNITY',
    regions: ['eu-west-1'],
  },
];

export const CURRENCY = 'USD';
/** Smallest container volume any machine accepts, in GB. */
export const MIN_CONTAINER_VOLUME_GB = 10;
/** Container volume a pod gets when the request leaves it out, in GB. */
export const DEFAULT_CONTAINER_VOLUME_GB = 50;
/** Price of container and persistent volume storage, USD per GB per hour. */
export const VOLUME_PRICE_PER_GB_HOUR = 0.0002;
export const VM_OS = { name: 'Ubuntu', version: '22.04', storageType: 'NVMe SSD' } as const;

const byType = new Map(GPU_MODELS.map((model) => [model.gpuType, model]));

export function findModel(gpuType: string): GpuModel | undefined {
  return byType.get(gpuType);
}

/** The GPU counts a model can be rented with: powers of two up to its maximum. */
export function gpuCounts(model: GpuModel): number[] {
  const counts: number[] = [];
  for (let count = 1; count <= model.maxGpuCount; count *= 2) counts.push(count);
  return counts;
}

/** A VM type is one model at one GPU count; its id is stable across regions and runs. */
export interface VmType {
  readonly vmTypeId: number;
  readonly model: GpuModel;
  readonly gpuCount: number;
}

export const VM_TYPES: readonly VmType[] = GPU_MODELS.flatMap((model, modelIndex) =>
  gpuCounts(model).map((gpuCount) => ({
    vmTypeId: (modelIndex + 1) * 100 + Math.log2(gpuCount) + 1,
    model,
    gpuCount,
  })),
);

const vmTypesById = new Map(VM_TYPES.map((type) => [type.vmTypeId, type]));

export function findVmType(vmTypeId: number): VmType | undefined {
  return vmTypesById.get(vmTypeId);
}

/** Money as the API shows it: a decimal string. */
export function usd(amount: number, decimals = 4): string {
  return amount.toFixed(decimals);
}

/** What a CPU-only pod runs on: not a GPU model, and not limited by the GPU capacity pools. */
export const CPU_MODEL: GpuModel = {
  gpuType: 'CPU',
  displayName: 'CPU',
  gpuMemoryInGb: 0,
  ramPerGpuInGb: 4,
  vcpuPerGpu: 2,
  localDiskPerGpuInGb: 50,
  pricePerGpuPerHour: 0.04,
  maxGpuCount: 64,
  cloudType: 'SECURE',
  regions: REGIONS,
};
