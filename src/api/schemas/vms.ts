import { z } from 'zod';
import {
  cloudId,
  epochMsAsNumber,
  idAsNumber,
  int64AsNumber,
  int64AsString,
  openEnum,
  pagedList,
  pageNumber,
  pageSize,
  text,
} from './common.ts';

/* v2 VMs. Every 64-bit number of a v2 VM payload is a JSON integer. */

export const VM_STATUSES = [
  'INITIALIZING',
  'RUNNING',
  'STOPPING',
  'STOPPED',
  'TERMINATING',
  'TERMINATED',
  'FAILED',
] as const;
export type VmStatus = (typeof VM_STATUSES)[number];

/** Fields the v1 and v2 VM objects share (v1 differs in `nickname`, `isSpot` and `status`). */
export const vmCommonFields = {
  id: idAsNumber,
  orgId: z.string(),
  gpuDisplayName: z.string(),
  ipAddress: z.string(),
  domainName: z.string(),
  cpuCores: z.number().int(),
  memoryInGb: z.string(),
  gpuCount: z.number().int(),
  gpuMemoryInGb: z.string(),
  region: z.string(),
  storageInGb: z.string(),
  notebookUrl: z.string(),
  sshTemplate: z.string(),
  createdAt: epochMsAsNumber,
  // A VM that is not terminated has no termination time; null says so better than a made-up 0.
  terminatedAt: epochMsAsNumber.nullable(),
  updatedAt: epochMsAsNumber,
  osInfo: z.string(),
  gpuType: z.string(),
};

export const vm = z.object({
  ...vmCommonFields,
  name: z.string(),
  status: openEnum(VM_STATUSES),
  isSpot: z.boolean(),
});
export type Vm = z.output<typeof vm>;

export const vmCreateRequest = z.strictObject({
  vmTypeId: z.number().int('vmTypeId must be an integer from the VM types listing'),
  region: text('region', 1),
  name: text('name', 1),
  isSpot: z.boolean({ error: 'isSpot is required: true for spot, false for on-demand' }),
  volumeMountPaths: z.record(z.string(), z.string()).optional(),
});
export type VmCreateRequest = z.output<typeof vmCreateRequest>;

export const vmUpdateRequest = z.strictObject({ name: text('name', 1, 255).optional() });
export type VmUpdateRequest = z.output<typeof vmUpdateRequest>;

export const vmListQuery = z.object({
  page: int64AsString(pageNumber).optional(),
  size: int64AsString(pageSize).optional(),
  status: z.string().optional(),
});
export type VmListQuery = z.output<typeof vmListQuery>;

export const vmList = pagedList(vm, int64AsNumber);
export type VmList = z.output<typeof vmList>;

export const vmParams = z.object({ id: cloudId });

/** One rentable configuration of the VM types listing; `vmTypeId` is what VM creation takes. */
export const vmTypeItem = z.object({
  vmTypeId: z.number().int(),
  gpuCount: z.number().int(),
  pricePerHour: z.string(),
  supportSpot: z.boolean(),
  spotPricePerHour: z.string().optional(),
  currency: z.string(),
  displayName: z.string(),
  cpuCores: z.number().int(),
  memoryInGb: z.string(),
  gpuMemoryInGb: z.string(),
  gpuTotalMemoryInGb: z.string(),
  storageType: z.string(),
  storageCapacityInGb: z.string(),
  osName: z.string(),
  osVersion: z.string(),
  supportOnDemand: z.boolean(),
  ondemandAvailable: z.boolean(),
  spotAvailable: z.boolean(),
});
export type VmTypeItem = z.output<typeof vmTypeItem>;

export const vmTypeRegion = z.object({ region: z.string(), types: z.array(vmTypeItem) });
export const vmGpuType = z.object({ gpuType: z.string(), regions: z.array(vmTypeRegion) });
export type VmGpuType = z.output<typeof vmGpuType>;

export const vmTypes = z.array(vmGpuType);
export type VmTypes = z.output<typeof vmTypes>;

/** v2 VM delete answers `true` on success. */
export const vmTerminated = z.boolean();
