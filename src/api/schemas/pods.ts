import { z } from 'zod';
import {
  cloudId,
  envVarRequest,
  epochMsAsString,
  gpuCountPowerOfTwo,
  httpUrl,
  idAsString,
  int64AsString,
  keyValue,
  maxPriceNeedsSpot,
  maxPriceNeedsSpotIssue,
  openEnum,
  port,
  queryList,
  text,
} from './common.ts';

/* v2 pods. Every 64-bit number of a v2 pod payload (ids, timestamps, durations) is a JSON string. */

export const POD_STATUSES = [
  'INITIALIZING',
  'RUNNING',
  'PAUSING',
  'PAUSED',
  'TERMINATING',
  'TERMINATED',
  'FAILED',
  'DEGRADED',
] as const;
export type PodStatus = (typeof POD_STATUSES)[number];

export const IMAGE_PUBLIC_TYPES = ['PUBLIC', 'PRIVATE'] as const;
export const RESOURCE_TYPES = ['GPU', 'CPU'] as const;
export const CLOUD_TYPES = ['SECURE', 'COMMUNITY'] as const;

/** Rules the v1 and v2 pod create requests share. */
export const podRequestFields = {
  image: text('image', 1, 255),
  imageRegistry: z.string().max(255, 'imageRegistry must be at most 255 characters').optional(),
  imagePublicType: z.enum(IMAGE_PUBLIC_TYPES).optional(),
  resourceType: z.enum(RESOURCE_TYPES).optional(),
  gpuType: text('gpuType', 1),
  gpuCount: gpuCountPowerOfTwo,
  isSpot: z.boolean().optional(),
  maxPrice: z.number().positive('maxPrice must be a positive hourly price').optional(),
  shmInGb: z.number().int().min(0).optional(),
  minSingleCardRamInGb: z.number().int().min(0).optional(),
  minSingleCardVramInGb: z.number().int().min(0).optional(),
  minSingleCardVcpu: z.number().int().min(0).optional(),
  containerVolumeInGb: z.number().int().min(0).optional(),
  initializationCommand: z.string().optional(),
  environmentVars: z.array(envVarRequest).optional(),
  expose: z
    .array(z.strictObject({ port: port('expose port'), protocol: text('expose protocol', 1) }))
    .optional(),
  callbackUrl: httpUrl('callbackUrl', 512).optional(),
};

export const podVolume = z.object({ id: z.string(), mountPath: z.string() });

export const podCreateRequest = z
  .strictObject({
    ...podRequestFields,
    regions: z.array(z.string()).optional(),
    name: text('name', 1, 255),
    containerRegistryAuthId: idAsString.pipe(cloudId).optional(),
    volumes: z
      .array(z.strictObject({ id: text('volume id', 1), mountPath: text('volume mountPath', 1) }))
      .optional(),
  })
  .refine(maxPriceNeedsSpot, maxPriceNeedsSpotIssue);
export type PodCreateRequest = z.output<typeof podCreateRequest>;

export const exposedPort = z.object({
  port: z.number().int(),
  proxyPort: z.number().int().nullable(),
  protocol: z.string(),
  host: z.string(),
  healthy: z.boolean(),
  ingressUrl: z.string(),
  serviceName: z.string().nullable(),
});
export type ExposedPort = z.output<typeof exposedPort>;

/**
 * Fields of the pod object whose wire type is the same in v1 and v2. The v1 object adds its own
 * ids, timestamps, prices and volumes (see legacy-pods.ts).
 */
export const podCommonFields = {
  officialImage: openEnum(['CUSTOM', 'OFFICIAL']),
  imagePublicType: openEnum(IMAGE_PUBLIC_TYPES),
  image: z.string(),
  imageRegistry: z.string(),
  imageRegistryUsername: z.string().nullable(),
  resourceType: openEnum(RESOURCE_TYPES),
  gpuType: z.string(),
  gpuDisplayName: z.string(),
  gpuCount: z.number().int(),
  shmInGb: z.number().int(),
  singleCardVramInGb: z.number().int(),
  singleCardRamInGb: z.number().int(),
  singleCardVcpu: z.number().int(),
  location: z.string().nullable(),
  region: z.string(),
  cloudType: openEnum(CLOUD_TYPES),
  containerVolumeInGb: z.number().int(),
  initializationCommand: z.string(),
  environmentVars: z.array(keyValue),
  expose: z.array(exposedPort),
  sshCmd: z.string().nullable(),
  status: openEnum(POD_STATUSES),
  isSpot: z.boolean(),
  internalIp: z.string().nullable(),
};

const podIdentity = {
  id: idAsString,
  orgId: idAsString,
  applicantId: idAsString,
  name: z.string(),
};

/** v2 pod object (create and get). `nodePool` and `reserveActive` come with get and list only. */
export const pod = z.object({
  ...podCommonFields,
  ...podIdentity,
  imageId: idAsString,
  persistentVolumeInGb: z.number().int().nullable(),
  persistentMountPath: z.string().nullable(),
  networkUploadMbps: z.string(),
  networkDownloadMbps: z.string(),
  diskReadSpeedMbps: z.string(),
  diskWriteSpeedMbps: z.string(),
  singleCardPrice: z.string(),
  persistentVolumePrice: z.string(),
  containerVolumePrice: z.string(),
  callbackUrl: z.string().nullable(),
  createdAt: epochMsAsString,
  updatedAt: epochMsAsString,
  volumes: z.array(podVolume),
  desiredState: z.string().nullable(),
  nodePool: openEnum(['reserved', 'shared']).optional(),
  reserveActive: z.boolean().optional(),
});
export type Pod = z.output<typeof pod>;

/** v2 pod list item: a subset of the pod object. */
export const podListItem = pod.pick({
  id: true,
  orgId: true,
  applicantId: true,
  name: true,
  image: true,
  imageRegistry: true,
  gpuType: true,
  gpuDisplayName: true,
  gpuCount: true,
  region: true,
  cloudType: true,
  containerVolumeInGb: true,
  status: true,
  isSpot: true,
  callbackUrl: true,
  createdAt: true,
  volumes: true,
  internalIp: true,
  nodePool: true,
  reserveActive: true,
});
export type PodListItem = z.output<typeof podListItem>;

export const podList = z.array(podListItem);

export const podListQuery = z.object({
  regionList: queryList.optional(),
  statusList: queryList.optional(),
});
export type PodListQuery = z.output<typeof podListQuery>;

export const podParams = z.object({ id: cloudId });

/* Logs */

/** Log sources. The spec shows CONTAINER only; SYSTEM (platform events) is our decision (docs/design.md §4.3). */
export const LOG_TYPES = ['CONTAINER', 'SYSTEM'] as const;

/** The most lines one page of a log may ask for (the simulator's bound; the spec shows none). */
export const MAX_LOG_LINES_PER_PAGE = 1000;

export const podLogsQuery = z
  .object({
    type: z.enum(LOG_TYPES).optional(),
    limit: int64AsString(z.number().int().min(1, 'limit must be at least 1 line')).optional(),
    cursor: z.string().optional(),
    startTime: int64AsString(z.number().int().min(0)).optional(),
    endTime: int64AsString(z.number().int().min(0)).optional(),
    keyword: z.string().optional(),
  })
  .refine((q) => q.startTime === undefined || q.endTime === undefined || q.startTime <= q.endTime, {
    message: 'startTime must not be after endTime',
    path: ['endTime'],
  });
export type PodLogsQuery = z.output<typeof podLogsQuery>;

/** The logs request may carry an empty JSON object as body; nothing else. */
export const podLogsBody = z.strictObject({}).optional();

/**
 * One log line. The timestamp stays an ISO 8601 string: log stamps can be finer than a millisecond,
 * and converting them would lose the order of lines within one millisecond.
 */
export const podLogLine = z.object({
  timestamp: z.string(),
  level: openEnum(['UNKNOWN', 'DEBUG', 'INFO', 'WARN', 'ERROR']),
  content: z.string(),
});
export type PodLogLine = z.output<typeof podLogLine>;

/** `nextCursor` is null at the end of the log (docs/design.md §4.3). */
export const podLogs = z.object({ items: z.array(podLogLine), nextCursor: z.string().nullable() });
export type PodLogs = z.output<typeof podLogs>;

/* Runtime: billing uptime. Every field is a string on the wire. */

export const podRuntime = z.object({
  id: idAsString,
  name: z.string(),
  status: openEnum(POD_STATUSES),
  createdAt: epochMsAsString,
  updatedAt: epochMsAsString,
  runningMillis: int64AsString(),
  runningSeconds: int64AsString(),
});
export type PodRuntime = z.output<typeof podRuntime>;

/* Lifecycle callback */

/**
 * What the service posts to a pod's `callbackUrl` on entering RUNNING, TERMINATED, FAILED or DEGRADED.
 * The spec does not show the body; docs/design.md §4.3 decides it. Ids and times are strings, as in every v2
 * pod payload.
 */
export const podCallback = z.object({
  podId: idAsString,
  status: openEnum(POD_STATUSES),
  timestamp: epochMsAsString,
});
export type PodCallback = z.output<typeof podCallback>;
