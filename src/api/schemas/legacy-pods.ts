import { z } from 'zod';
import {
  cloudId,
  decimalAsNumber,
  idAsNumber,
  isoAsEpochMs,
  maxPriceNeedsSpot,
  maxPriceNeedsSpotIssue,
  text,
} from './common.ts';
import { podCommonFields, podRequestFields } from './pods.ts';

/*
 * Legacy v1 pods: `podName` for `name`, integer ids, numeric speeds and prices, ISO timestamps and
 * `persistentVolumes` for `volumes`. The application form matches v2: string ids and prices, epoch-ms times.
 */

export const legacyPersistentVolume = z.object({
  id: z.string(),
  name: z.string(),
  volumeType: z.string(),
  mountMode: z.string(),
  volumeSize: z.number().int(),
  volumePrice: z.number(),
  mountPath: z.string(),
  cloudStorageType: z.string(),
  systemVolumeType: z.string(),
});
export type LegacyPersistentVolume = z.output<typeof legacyPersistentVolume>;

export const legacyPodCreateRequest = z
  .strictObject({
    ...podRequestFields,
    region: z.string().optional(),
    regionList: z.array(z.string()).optional(),
    podName: text('podName', 1, 255),
    credentialId: idAsNumber.pipe(cloudId).optional(),
    imageRegistryUsername: z.string().optional(),
    // A secret: never logged (the transport logs neither bodies nor headers).
    imageRegistryToken: z.string().optional(),
    persistentVolumes: z.array(legacyPersistentVolume.strict()).optional(),
  })
  .refine(maxPriceNeedsSpot, maxPriceNeedsSpotIssue);
export type LegacyPodCreateRequest = z.output<typeof legacyPodCreateRequest>;

/** v1 pod create answers with the new pod's id, a JSON integer. */
export const legacyPodCreated = idAsNumber;

export const legacyPod = z.object({
  ...podCommonFields,
  id: idAsNumber,
  orgId: idAsNumber,
  applicantId: idAsNumber,
  imageId: idAsNumber,
  podName: z.string(),
  networkUploadMbps: decimalAsNumber,
  networkDownloadMbps: decimalAsNumber,
  diskReadSpeedMbps: decimalAsNumber,
  diskWriteSpeedMbps: decimalAsNumber,
  singleCardPrice: decimalAsNumber,
  containerVolumePrice: decimalAsNumber,
  createdAt: isoAsEpochMs,
  updatedAt: isoAsEpochMs,
  persistentVolumes: z.array(legacyPersistentVolume),
});
export type LegacyPod = z.output<typeof legacyPod>;

export const legacyPodList = z.array(legacyPod);

export const legacyPodParams = z.object({ podId: cloudId });
