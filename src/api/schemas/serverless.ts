import { z } from 'zod';
import {
  cloudId,
  envVarRequest,
  epochMsAsString,
  httpUrl,
  idAsString,
  int64AsString,
  keyValue,
  openEnum,
  pagedList,
  pageNumber,
  pageSize,
  port,
  queryList,
} from './common.ts';

/* Serverless endpoints and their task queue. 64-bit numbers (ids, timestamps, counters) are strings. */

/** In this order: the reduced endpoint object's numeric status is the index here (docs/design.md §4.1). */
export const ENDPOINT_STATUSES = ['INITIALIZING', 'RUNNING', 'STOPPING', 'STOPPED', 'FAILED'] as const;
export type EndpointStatus = (typeof ENDPOINT_STATUSES)[number];

export const SERVICE_MODES = ['ALB', 'QUEUE', 'CUSTOM'] as const;
export type ServiceMode = (typeof SERVICE_MODES)[number];

export const endpointName = z
  .string({ error: 'name is required' })
  .regex(
    /^(?=[A-Za-z])[A-Za-z0-9@._-]{1,20}$/,
    'name must be 1 to 20 characters, start with a letter, and use only A-Z a-z 0-9 @ . _ -',
  );

const endpointResourceRequest = z.strictObject({
  region: z.string().min(1, 'resource region must not be empty'),
  gpuType: z.string().min(1, 'resource gpuType must not be empty'),
  gpuCount: z.number().int().min(1, 'resource gpuCount must be at least 1'),
});

const endpointRequestFields = {
  name: endpointName,
  imageRegistry: z.string().optional(),
  image: z.string().min(1, 'image must not be empty'),
  resources: z.array(endpointResourceRequest).min(1, 'resources must name at least one region and GPU type'),
  minSingleCardVramInGb: z.number().int().min(0).optional(),
  minSingleCardVcpu: z.number().int().min(0).optional(),
  minSingleCardRamInGb: z.number().int().min(0).optional(),
  workers: z.number().int().min(0, 'workers must not be negative').optional(),
  credentialId: idAsString.pipe(cloudId).optional(),
  containerVolumeInGb: z.number().int().min(0).optional(),
  initializationCommand: z.string().optional(),
  envVars: z.array(envVarRequest).optional(),
  expose: z.strictObject({ port: port('expose port'), protocol: z.string().min(1) }).optional(),
  serviceMode: z.enum(SERVICE_MODES).optional(),
  webhook: httpUrl('webhook').optional(),
};

/**
 * The spec does not say which fields are required. We require what an endpoint cannot run without:
 * a name, an image and at least one resource; the service chooses defaults for the rest.
 */
export const endpointCreateRequest = z.strictObject(endpointRequestFields);
export type EndpointCreateRequest = z.output<typeof endpointCreateRequest>;

/** Partial update: a subset of the create fields, with the same rules. */
export const endpointUpdateRequest = endpointCreateRequest.partial();
export type EndpointUpdateRequest = z.output<typeof endpointUpdateRequest>;

export const endpointResource = z.object({
  region: z.string(),
  regionDisplayName: z.string(),
  gpuType: z.string(),
  gpuDisplayName: z.string(),
  gpuCount: z.number().int(),
  singleCardVramInGb: z.number().int(),
  singleCardVcpu: z.number().int(),
  singleCardRamInGb: z.number().int(),
});

export const endpointStatus = openEnum(ENDPOINT_STATUSES);

export const endpoint = z.object({
  id: idAsString,
  name: z.string(),
  creator: z.string(),
  domain: z.string().nullable(),
  imageRegistry: z.string(),
  image: z.string(),
  resources: z.array(endpointResource),
  minSingleCardVramInGb: z.number().int(),
  minSingleCardVcpu: z.number().int(),
  minSingleCardRamInGb: z.number().int(),
  credentialId: idAsString.nullable(),
  containerVolumeInGb: z.number().int(),
  initializationCommand: z.string(),
  environmentVars: z.array(keyValue),
  expose: z.object({ port: z.number().int(), protocol: z.string() }).nullable(),
  totalWorkers: z.number().int(),
  runningWorkers: z.number().int(),
  cost: z.string(),
  perSecondPrice: z.string(),
  perHourPrice: z.string(),
  serviceMode: openEnum(SERVICE_MODES),
  webhook: z.string().nullable(),
  status: endpointStatus,
});
export type Endpoint = z.output<typeof endpoint>;

export const endpointList = z.array(endpoint);

/**
 * The numeric status of the reduced endpoint object, seen by callers as the same name the full
 * object carries. An index we do not know decodes to its decimal text (and encodes back), so a new
 * cloud status never breaks a read.
 */
const numericEndpointStatus = z.codec(z.number().int().min(0), endpointStatus, {
  decode: (index) => ENDPOINT_STATUSES[index] ?? String(index),
  encode: (status) => {
    const index = ENDPOINT_STATUSES.indexOf(status as EndpointStatus);
    return index >= 0 ? index : Number(status);
  },
});

/** What get-by-id and update answer: id, name, status, domain. */
export const endpointSummary = z.object({
  id: idAsString,
  name: z.string(),
  status: numericEndpointStatus,
  domain: z.string().nullable(),
});
export type EndpointSummary = z.output<typeof endpointSummary>;

export const endpointListQuery = z.object({ statusList: queryList.optional() });
export type EndpointListQuery = z.output<typeof endpointListQuery>;

export const endpointParams = z.object({ id: cloudId });

export const workersQuery = z.object({
  count: int64AsString(z.number().int().min(0, 'worker count must not be negative')),
});

/* Tasks */

export const TASK_STATUSES = ['PROCESSING', 'DELIVERED', 'SUCCESS', 'FAILED'] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];

/** Webhook delivery of a task's result, tracked apart from the task status (docs/design.md §4.1). */
export const DELIVERY_STATUSES = ['INIT', 'SUCCESS', 'FAILED', 'MAX_RETRIES_EXCEEDED'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

export const taskId = z
  .string()
  .regex(/^[A-Za-z0-9_]*$/, 'taskId may contain only the characters A-Z a-z 0-9 _');

export const taskSubmitRequest = z.strictObject({
  taskId: taskId.optional(),
  input: z.unknown(),
  workerPort: port('workerPort').optional(),
  processUri: z
    .string()
    .startsWith('/', 'processUri must be a path on the worker, starting with /')
    .optional(),
  webhook: httpUrl('webhook').optional(),
  // Sent to the webhook as header X-API-Key; the field name is our decision (docs/design.md §4.1).
  webhookAuthKey: z.string().optional(),
});
export type TaskSubmitRequest = z.output<typeof taskSubmitRequest>;

export const taskSubmitted = z.object({ taskId: z.string() });
export type TaskSubmitted = z.output<typeof taskSubmitted>;

export const taskParams = z.object({ id: cloudId, taskId: taskId.min(1, 'taskId must not be empty') });

const taskSummaryFields = {
  taskId: z.string(),
  endpointId: idAsString,
  endpointName: z.string(),
  status: openEnum(TASK_STATUSES),
  workerUrl: z.string().nullable(),
  webhook: z.string().nullable(),
  deliveryStatus: openEnum(DELIVERY_STATUSES),
  deliveryAttempts: z.number().int(),
  error: z.string().nullable(),
  createdAt: epochMsAsString,
  updatedAt: epochMsAsString,
  deliveredAt: epochMsAsString.nullable(),
};

/** A task as listed: without input, output and headers. */
export const taskSummary = z.object(taskSummaryFields);
export type TaskSummary = z.output<typeof taskSummary>;

export const task = z.object({
  ...taskSummaryFields,
  input: z.unknown(),
  output: z.unknown().nullable(),
  headers: z.record(z.string(), z.string()).nullable(),
});
export type Task = z.output<typeof task>;

export const taskListQuery = z.object({
  status: z.enum(TASK_STATUSES).optional(),
  page: int64AsString(pageNumber).optional(),
  size: int64AsString(pageSize).optional(),
});
export type TaskListQuery = z.output<typeof taskListQuery>;

export const taskList = pagedList(taskSummary, int64AsString);
export type TaskList = z.output<typeof taskList>;

/** Task counts keyed by lower-case status name, e.g. `{ processing: 2, success: 5 }`. */
export const taskCounts = z.record(z.string(), int64AsString(z.number().int().min(0)));
export type TaskCounts = z.output<typeof taskCounts>;
