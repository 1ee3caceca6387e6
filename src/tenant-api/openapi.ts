// The group's OpenAPI documents, published as an aggregated server publishes them: /openapi/v2, which the
// aggregator merges into the apiserver's, and /openapi/v3 with the group version's document, which it
// lists in its own /openapi/v3 and proxies. Clients generated from OpenAPI (and tools that read it) then
// know the paths, their parameters and the answers. The answers' schemas are zod schemas built from the
// cloud client's own, in their application form: what the handlers send.
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { POD_METRICS } from '../api/pod-metrics.ts';
import { MAX_PAGE_SIZE } from '../api/schemas/common.ts';
import { METRIC_NAMES, METRIC_STEPS, metricSeries, storageUsage } from '../api/schemas/metrics.ts';
import { MAX_LOG_LINES_PER_PAGE } from '../api/schemas/pods.ts';
import { TASK_STATUSES, task, taskCounts, taskList } from '../api/schemas/serverless.ts';
import { MAX_SINCE_SECONDS } from '../serving/query.ts';
import { TENANT_GROUP, TENANT_GROUP_VERSION, TENANT_VERSION } from './group.ts';
import { MAX_KEYWORD_LENGTH, MAX_TASK_PAGE, taskSubmission } from './query.ts';

const typeMeta = <Kind extends string>(kind: Kind) => ({
  kind: z.literal(kind),
  apiVersion: z.literal(TENANT_GROUP_VERSION),
});
const resourceName = z.object({ namespace: z.string(), name: z.string() });

/** Every body the API answers or takes, by the name its schema has in the documents. */
export const tenantSchemas = {
  GpuPodMetrics: z.object({
    ...typeMeta('GpuPodMetrics'),
    metadata: resourceName,
    window: z.object({ start: z.number().int(), end: z.number().int(), step: z.enum(METRIC_STEPS) }),
    series: z.array(z.object({ metric_name: z.enum(METRIC_NAMES), series: z.array(metricSeries) })),
    storage: storageUsage,
  }),
  ServerlessTaskList: taskList.extend(typeMeta('ServerlessTaskList')),
  ServerlessTask: task.extend(typeMeta('ServerlessTask')),
  ServerlessTaskCounts: z.object({
    ...typeMeta('ServerlessTaskCounts'),
    metadata: resourceName,
    counts: taskCounts.describe('tasks by lower-case status name, e.g. {"processing": 2, "success": 5}'),
  }),
  ServerlessTaskSubmitted: z.object({ ...typeMeta('ServerlessTask'), taskId: z.string() }),
  ServerlessTaskSubmit: taskSubmission,
  Status: z.object({
    kind: z.literal('Status'),
    apiVersion: z.literal('v1'),
    metadata: z.object({}),
    status: z.literal('Failure'),
    message: z.string(),
    reason: z.string(),
    code: z.number().int(),
  }),
} as const;
type SchemaName = keyof typeof tenantSchemas;
/** The schemas that are kinds of the group, so that tools can tell them by group, version and kind. */
const KINDS: readonly SchemaName[] = [
  'GpuPodMetrics',
  'ServerlessTaskList',
  'ServerlessTask',
  'ServerlessTaskCounts',
];
/** Where a schema lives in the documents: a Kubernetes-style name from the group, reversed. */
const definitionName = (name: SchemaName) =>
  `${TENANT_GROUP.split('.').reverse().join('.')}.${TENANT_VERSION}.${name}`;

interface QueryParameter {
  readonly name: string;
  readonly description: string;
  readonly schema: Readonly<Record<string, unknown>>;
}

interface Operation {
  readonly method: 'get' | 'post';
  /** Below `/apis/<group>/<version>/namespaces/{namespace}/`. */
  readonly path: string;
  readonly id: string;
  readonly description: string;
  readonly query: readonly QueryParameter[];
  readonly body?: SchemaName;
  readonly code: 200 | 201;
  /** A schema name, or `text` for the log's lines. */
  readonly answer: SchemaName | 'text';
  readonly refusals: readonly number[];
}

const whole = (minimum: number, maximum?: number) => ({
  type: 'integer',
  minimum,
  ...(maximum === undefined ? {} : { maximum }),
});
const READ_REFUSALS = [400, 401, 403, 404, 429, 502, 503];

const OPERATIONS: readonly Operation[] = [
  {
    method: 'get',
    path: 'gpupods/{name}/log',
    id: 'readTenantGpucloudIoV1alpha1NamespacedGpuPodLog',
    description: "The pod's log, one `<timestamp> <line>` a line; followed, streamed until the client goes.",
    query: [
      { name: 'follow', description: 'stream new lines as they come', schema: { type: 'boolean' } },
      {
        name: 'sinceSeconds',
        description: 'only lines of the last seconds',
        schema: whole(1, MAX_SINCE_SECONDS),
      },
      { name: 'limit', description: 'at most this many lines', schema: whole(1, MAX_LOG_LINES_PER_PAGE) },
      {
        name: 'keyword',
        description: 'only lines holding this text',
        schema: { type: 'string', minLength: 1, maxLength: MAX_KEYWORD_LENGTH },
      },
    ],
    code: 200,
    answer: 'text',
    refusals: READ_REFUSALS,
  },
  {
    method: 'get',
    path: 'gpupods/{name}/metrics',
    id: 'readTenantGpucloudIoV1alpha1NamespacedGpuPodMetrics',
    description: "The pod's CPU, GPU, memory and GPU-memory series over the window, and its storage.",
    query: [
      {
        name: 'window',
        description: 'how far back: 90s, 10m, 1h (the default), 2d',
        schema: { type: 'string', pattern: '^\\d+[smhd]$' },
      },
      {
        name: 'step',
        description: 'the resolution; 30s up to a window of 1 h, else 5m, unless given',
        schema: { type: 'string', enum: [...METRIC_STEPS] },
      },
      {
        name: 'series',
        description: `a comma-separated list of ${POD_METRICS.join(', ')} (default: all)`,
        schema: { type: 'string' },
      },
    ],
    code: 200,
    answer: 'GpuPodMetrics',
    refusals: READ_REFUSALS,
  },
  {
    method: 'get',
    path: 'serverlessendpoints/{name}/tasks',
    id: 'listTenantGpucloudIoV1alpha1NamespacedServerlessEndpointTasks',
    description: "One page of the endpoint's tasks.",
    query: [
      {
        name: 'status',
        description: 'only tasks in this status',
        schema: { type: 'string', enum: [...TASK_STATUSES] },
      },
      { name: 'page', description: 'the page, from 1', schema: whole(1, MAX_TASK_PAGE) },
      { name: 'size', description: 'tasks a page', schema: whole(1, MAX_PAGE_SIZE) },
    ],
    code: 200,
    answer: 'ServerlessTaskList',
    refusals: READ_REFUSALS,
  },
  {
    method: 'get',
    path: 'serverlessendpoints/{name}/tasks/count',
    id: 'readTenantGpucloudIoV1alpha1NamespacedServerlessEndpointTaskCounts',
    description:
      "The endpoint's tasks counted by status. `count` is the cloud's own word here: a task with that id is not readable by id.",
    query: [],
    code: 200,
    answer: 'ServerlessTaskCounts',
    refusals: READ_REFUSALS,
  },
  {
    method: 'get',
    path: 'serverlessendpoints/{name}/tasks/{taskId}',
    id: 'readTenantGpucloudIoV1alpha1NamespacedServerlessEndpointTask',
    description: 'One task, with its output.',
    query: [],
    code: 200,
    answer: 'ServerlessTask',
    refusals: READ_REFUSALS,
  },
  {
    method: 'post',
    path: 'serverlessendpoints/{name}/tasks',
    id: 'createTenantGpucloudIoV1alpha1NamespacedServerlessEndpointTask',
    description: 'Submits a task, once per task id: 409 when a task of that id exists.',
    query: [],
    body: 'ServerlessTaskSubmit',
    code: 201,
    answer: 'ServerlessTaskSubmitted',
    refusals: [...READ_REFUSALS, 409],
  },
];

const PATH_PREFIX = `/apis/${TENANT_GROUP_VERSION}/namespaces/{namespace}/`;
const TITLE = 'gpucloud-operator tenant API';

function pathParameters(path: string): { name: string; description: string }[] {
  return [
    { name: 'namespace', description: 'the namespace of the resource' },
    { name: 'name', description: 'the name of the GpuPod or ServerlessEndpoint' },
    ...(path.includes('{taskId}') ? [{ name: 'taskId', description: 'the task id' }] : []),
  ];
}

/** A zod schema as the documents carry it; kinds say which group, version and kind they are. */
function jsonSchema(name: SchemaName): Record<string, unknown> {
  const io = name === 'ServerlessTaskSubmit' ? 'input' : 'output';
  const { $schema: _, ...schema } = z.toJSONSchema(tenantSchemas[name], {
    io,
    target: 'openapi-3.0',
    unrepresentable: 'any',
  });
  if (!KINDS.includes(name)) return schema;
  return {
    ...schema,
    'x-kubernetes-group-version-kind': [{ group: TENANT_GROUP, version: TENANT_VERSION, kind: name }],
  };
}

function schemas(): Record<string, Record<string, unknown>> {
  const names = Object.keys(tenantSchemas) as SchemaName[];
  return Object.fromEntries(names.map((name) => [definitionName(name), jsonSchema(name)]));
}

const REASONS: Readonly<Record<number, string>> = {
  400: 'a parameter or the body is not valid (the message names it)',
  401: 'not through the apiserver',
  403: 'RBAC does not allow it',
  404: 'no such resource, task, or cloud object yet',
  409: 'a task of that id exists',
  429: "beyond the account's tenant share of calls, or its open follows",
  502: 'the GPU cloud refused or failed',
  503: 'the GPU cloud or this replica cannot serve now',
};

/** Swagger 2.0, which the aggregator merges into the apiserver's /openapi/v2. */
function v2(): object {
  const ref = (name: SchemaName) => ({ $ref: `#/definitions/${definitionName(name)}` });
  const paths: Record<string, Record<string, unknown>> = {};
  for (const op of OPERATIONS) {
    const path = `${PATH_PREFIX}${op.path}`;
    paths[path] ??= {
      parameters: pathParameters(op.path).map((p) => ({ ...p, in: 'path', required: true, type: 'string' })),
    };
    paths[path][op.method] = {
      operationId: op.id,
      description: op.description,
      consumes: ['application/json'],
      produces: [op.answer === 'text' ? 'text/plain' : 'application/json'],
      schemes: ['https'],
      tags: ['tenantGpucloudIo_v1alpha1'],
      parameters: [
        ...op.query.map((q) => ({ name: q.name, in: 'query', description: q.description, ...q.schema })),
        ...(op.body ? [{ name: 'body', in: 'body', required: true, schema: ref(op.body) }] : []),
      ],
      responses: {
        [op.code]: {
          description: op.code === 201 ? 'Created' : 'OK',
          schema: op.answer === 'text' ? { type: 'string' } : ref(op.answer),
        },
        ...Object.fromEntries(
          op.refusals.map((code) => [code, { description: REASONS[code], schema: ref('Status') }]),
        ),
      },
      'x-kubernetes-action': op.method === 'post' ? 'post' : 'get',
    };
  }
  return {
    swagger: '2.0',
    info: { title: TITLE, version: TENANT_VERSION },
    paths,
    definitions: schemas(),
  };
}

/** OpenAPI 3.0, the group version's document that the apiserver's /openapi/v3 lists. */
function v3(): object {
  const ref = (name: SchemaName) => ({ $ref: `#/components/schemas/${definitionName(name)}` });
  const json = (schema: object) => ({ 'application/json': { schema } });
  const paths: Record<string, Record<string, unknown>> = {};
  for (const op of OPERATIONS) {
    const path = `${PATH_PREFIX}${op.path}`;
    paths[path] ??= {
      parameters: pathParameters(op.path).map((p) => ({
        ...p,
        in: 'path',
        required: true,
        schema: { type: 'string' },
      })),
    };
    paths[path][op.method] = {
      operationId: op.id,
      description: op.description,
      tags: ['tenantGpucloudIo_v1alpha1'],
      parameters: op.query.map((q) => ({
        name: q.name,
        in: 'query',
        description: q.description,
        schema: q.schema,
      })),
      ...(op.body ? { requestBody: { required: true, content: json(ref(op.body)) } } : {}),
      responses: {
        [op.code]: {
          description: op.code === 201 ? 'Created' : 'OK',
          content:
            op.answer === 'text' ? { 'text/plain': { schema: { type: 'string' } } } : json(ref(op.answer)),
        },
        ...Object.fromEntries(
          op.refusals.map((code) => [code, { description: REASONS[code], content: json(ref('Status')) }]),
        ),
      },
      'x-kubernetes-action': op.method === 'post' ? 'post' : 'get',
    };
  }
  return {
    openapi: '3.0.0',
    info: { title: TITLE, version: TENANT_VERSION },
    paths,
    components: { schemas: schemas() },
  };
}

const V3_PATH = `apis/${TENANT_GROUP_VERSION}`;
let built: ReadonlyMap<string, object> | undefined;

/** The documents by path, made once: they change only with the code. */
function documents(): ReadonlyMap<string, object> {
  if (built) return built;
  const groupVersion = v3();
  // As the apiserver names a version of a document: a hash of it, so that clients may cache by URL.
  const hash = createHash('sha512').update(JSON.stringify(groupVersion)).digest('hex').toUpperCase();
  built = new Map<string, object>([
    ['/openapi/v2', v2()],
    ['/openapi/v3', { paths: { [V3_PATH]: { serverRelativeURL: `/openapi/v3/${V3_PATH}?hash=${hash}` } } }],
    [`/openapi/v3/${V3_PATH}`, groupVersion],
  ]);
  return built;
}

/** The OpenAPI document at `path`, or undefined when `path` is not one. */
export function openApiDocument(path: string): object | undefined {
  return path.startsWith('/openapi/') ? documents().get(path.replace(/\/+$/, '')) : undefined;
}
