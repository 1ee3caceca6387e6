import { z } from 'zod';
import { cloudId, flagAsInteger, int64AsNumber, pageNumber, pageSize, text } from './common.ts';
import { vmCommonFields } from './vms.ts';

/* Legacy v1 VMs: the v2 VM with `nickname` for `name`, an integer `isSpot`, and a free status. */

export const legacyVm = z.object({
  ...vmCommonFields,
  nickname: z.string(),
  isSpot: flagAsInteger,
  status: z.string(),
});
export type LegacyVm = z.output<typeof legacyVm>;

export const legacyVmCreateRequest = z.strictObject({
  vmTypeId: z.number().int('vmTypeId must be an integer from the VM types listing'),
  region: text('region', 1),
  regionId: z.number().int().optional(),
  nickName: text('nickName', 1, 255),
  isSpot: flagAsInteger,
  volumeMountPaths: z.record(z.string(), z.string()).optional(),
});
export type LegacyVmCreateRequest = z.output<typeof legacyVmCreateRequest>;

export const legacyVmParams = z.object({ vmId: cloudId });

const pageCounter = int64AsNumber(z.number().int().min(0));

export const legacyVmListRequest = z.strictObject({
  search: z.strictObject({ status: z.string().optional() }).optional(),
  pageNumber: int64AsNumber(pageNumber),
  pageSize: int64AsNumber(pageSize),
  pageMark: pageCounter.optional(),
  totalPage: pageCounter.optional(),
  totalRow: pageCounter.optional(),
  nextPage: z.boolean().optional(),
});
export type LegacyVmListRequest = z.output<typeof legacyVmListRequest>;

export const legacyVmList = z.object({
  records: z.array(legacyVm),
  pageNumber: int64AsNumber(),
  pageSize: int64AsNumber(),
  totalPage: int64AsNumber(),
  totalRow: int64AsNumber(),
});
export type LegacyVmList = z.output<typeof legacyVmList>;
