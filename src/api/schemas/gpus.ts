import { z } from 'zod';
import { int64AsString, openEnum, pagedList, pageNumber, pageSize } from './common.ts';
import { CLOUD_TYPES } from './pods.ts';

/* GPU machine spec search (`POST /v2/gpu/list`). Counters travel as strings, like every v2 pod payload. */

export const gpuSearchRequest = z.strictObject({
  page: int64AsString(pageNumber).optional(),
  size: int64AsString(pageSize).optional(),
  regions: z.array(z.string()).optional(),
  gpuTypes: z.array(z.string()).optional(),
  gpuCounts: z.array(z.number().int().min(1, 'gpuCounts must be positive')).optional(),
  minGpuMemoryInGb: z.number().int().min(0).optional(),
  minRamPerGpuInGb: z.number().int().min(0).optional(),
  minVcpuPerGpu: z.number().int().min(0).optional(),
  containerVolumeInGb: z.number().int().min(0).optional(),
  systemVolumeInGb: z.number().int().min(0).nullable().optional(),
  // The complete sets are not shown in the spec, so any value passes through to the service.
  cloudTypes: z.array(z.string()).optional(),
  acceleratorVendor: z.string().optional(),
  includeUnavailable: z.boolean().optional(),
  isSpot: z.boolean().optional(),
});
export type GpuSearchRequest = z.output<typeof gpuSearchRequest>;

export const gpuCountOption = z.object({
  gpuCount: z.number().int(),
  available: z.boolean(),
  totalGpuMemoryInGb: z.number().int(),
  totalRamInGb: z.number().int(),
  totalVcpu: z.number().int(),
  totalLocalDiskInGb: z.number().int(),
  containerVolume: z.object({ minInGb: z.number().int(), maxInGb: z.number().int() }),
  price: z.object({
    pricePerGpuPerHour: z.string(),
    gpuPricePerHour: z.string(),
    containerVolumePricePerGbPerHour: z.string(),
    currency: z.string(),
  }),
});
export type GpuCountOption = z.output<typeof gpuCountOption>;

export const gpuSpec = z.object({
  gpuType: z.string(),
  displayName: z.string(),
  gpuMemoryInGb: z.number().int(),
  region: z.string(),
  cloudType: openEnum(CLOUD_TYPES),
  acceleratorVendor: openEnum(['NVIDIA']),
  isSpot: z.boolean(),
  status: openEnum(['AVAILABLE']),
  maxGpuCount: z.number().int(),
  availableGpuCounts: z.array(z.number().int()),
  ramPerGpuInGb: z.number().int(),
  vcpuPerGpu: z.number().int(),
  localDiskPerGpuInGb: z.number().int(),
  gpuCountOptions: z.array(gpuCountOption),
});
export type GpuSpec = z.output<typeof gpuSpec>;

export const gpuSearchResult = pagedList(gpuSpec, int64AsString);
export type GpuSearchResult = z.output<typeof gpuSearchResult>;
