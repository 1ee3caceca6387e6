import type { z } from 'zod';
import type { Operation } from './operation.ts';
import { idParams, noBody, none, nothing } from './schemas/common.ts';
import { gpuSearchRequest, gpuSearchResult } from './schemas/gpus.ts';
import {
  legacyPod,
  legacyPodCreated,
  legacyPodCreateRequest,
  legacyPodList,
  legacyPodParams,
} from './schemas/legacy-pods.ts';
import {
  legacyVm,
  legacyVmCreateRequest,
  legacyVmList,
  legacyVmListRequest,
  legacyVmParams,
} from './schemas/legacy-vms.ts';
import { metricResponse, metricsParams, metricsQuery, storageUsage } from './schemas/metrics.ts';
import {
  pod,
  podCreateRequest,
  podList,
  podListQuery,
  podLogs,
  podLogsBody,
  podLogsQuery,
  podRuntime,
} from './schemas/pods.ts';
import {
  endpoint,
  endpointCreateRequest,
  endpointList,
  endpointListQuery,
  endpointSummary,
  endpointUpdateRequest,
  task,
  taskCounts,
  taskList,
  taskListQuery,
  taskParams,
  taskSubmitRequest,
  taskSubmitted,
  workersQuery,
} from './schemas/serverless.ts';
import {
  vm,
  vmCreateRequest,
  vmList,
  vmListQuery,
  vmTerminated,
  vmTypes,
  vmUpdateRequest,
} from './schemas/vms.ts';

/*
 * Every operation of the GPU cloud API, once. The client builds requests from this table and the
 * simulator routes and validates with it, so the two sides share one contract.
 *
 * `creates: true` marks the calls that make something the caller pays for and that a blind retry
 * could make twice: VM, pod and endpoint creation (v1 and v2), and task submission. A task is not a
 * rented machine, but without a caller-chosen taskId a second submit queues the work again and
 * bills the worker time twice, so it is never retried automatically either.
 */

/** Identity function that keeps each operation's precise schema types. */
function define<P extends z.ZodType, Q extends z.ZodType, B extends z.ZodType, D extends z.ZodType>(
  operation: Operation<P, Q, B, D>,
): Operation<P, Q, B, D> {
  return Object.freeze(operation);
}

const vms = {
  types: define({
    name: 'vms.types',
    method: 'GET',
    path: '/v2/vms/types',
    params: none,
    query: none,
    body: noBody,
    data: vmTypes,
    creates: false,
  }),
  create: define({
    name: 'vms.create',
    method: 'POST',
    path: '/v2/vms',
    params: none,
    query: none,
    body: vmCreateRequest,
    data: vm,
    creates: true,
  }),
  get: define({
    name: 'vms.get',
    method: 'GET',
    path: '/v2/vms/{id}',
    params: idParams,
    query: none,
    body: noBody,
    data: vm,
    creates: false,
  }),
  list: define({
    name: 'vms.list',
    method: 'GET',
    path: '/v2/vms',
    params: none,
    query: vmListQuery,
    body: noBody,
    data: vmList,
    creates: false,
  }),
  update: define({
    name: 'vms.update',
    method: 'PATCH',
    path: '/v2/vms/{id}',
    params: idParams,
    query: none,
    body: vmUpdateRequest,
    data: vm,
    creates: false,
  }),
  terminate: define({
    name: 'vms.terminate',
    method: 'DELETE',
    path: '/v2/vms/{id}',
    params: idParams,
    query: none,
    body: noBody,
    data: vmTerminated,
    creates: false,
  }),
};

const pods = {
  create: define({
    name: 'pods.create',
    method: 'POST',
    path: '/v2/pods',
    params: none,
    query: none,
    body: podCreateRequest,
    data: pod,
    creates: true,
  }),
  get: define({
    name: 'pods.get',
    method: 'GET',
    path: '/v2/pods/{id}',
    params: idParams,
    query: none,
    body: noBody,
    data: pod,
    creates: false,
  }),
  list: define({
    name: 'pods.list',
    method: 'GET',
    path: '/v2/pods',
    params: none,
    query: podListQuery,
    body: noBody,
    data: podList,
    creates: false,
  }),
  delete: define({
    name: 'pods.delete',
    method: 'DELETE',
    path: '/v2/pods/{id}',
    params: idParams,
    query: none,
    body: noBody,
    data: nothing,
    creates: false,
  }),
  pause: define({
    name: 'pods.pause',
    method: 'POST',
    path: '/v2/pods/{id}/pause',
    params: idParams,
    query: none,
    body: noBody,
    data: nothing,
    creates: false,
  }),
  resume: define({
    name: 'pods.resume',
    method: 'POST',
    path: '/v2/pods/{id}/resume',
    params: idParams,
    query: none,
    body: noBody,
    data: nothing,
    creates: false,
  }),
  searchGpus: define({
    name: 'pods.searchGpus',
    method: 'POST',
    path: '/v2/gpu/list',
    params: none,
    query: none,
    body: gpuSearchRequest,
    data: gpuSearchResult,
    creates: false,
  }),
  logs: define({
    name: 'pods.logs',
    method: 'GET',
    path: '/v2/pods/{id}/logs',
    params: idParams,
    query: podLogsQuery,
    body: podLogsBody,
    data: podLogs,
    creates: false,
  }),
  runtime: define({
    name: 'pods.runtime',
    method: 'GET',
    path: '/v2/pods/{id}/runtime',
    params: idParams,
    query: none,
    body: noBody,
    data: podRuntime,
    creates: false,
  }),
};

const tasks = {
  submit: define({
    name: 'serverless.tasks.submit',
    method: 'POST',
    path: '/v2/serverless/{id}/tasks',
    params: idParams,
    query: none,
    body: taskSubmitRequest,
    data: taskSubmitted,
    creates: true,
  }),
  list: define({
    name: 'serverless.tasks.list',
    method: 'GET',
    path: '/v2/serverless/{id}/tasks',
    params: idParams,
    query: taskListQuery,
    body: noBody,
    data: taskList,
    creates: false,
  }),
  // Routers must try the literal `/tasks/count` before `/tasks/{taskId}`: "count" is a valid taskId.
  count: define({
    name: 'serverless.tasks.count',
    method: 'GET',
    path: '/v2/serverless/{id}/tasks/count',
    params: idParams,
    query: none,
    body: noBody,
    data: taskCounts,
    creates: false,
  }),
  get: define({
    name: 'serverless.tasks.get',
    method: 'GET',
    path: '/v2/serverless/{id}/tasks/{taskId}',
    params: taskParams,
    query: none,
    body: noBody,
    data: task,
    creates: false,
  }),
};

const serverless = {
  create: define({
    name: 'serverless.create',
    method: 'POST',
    path: '/v2/serverless',
    params: none,
    query: none,
    body: endpointCreateRequest,
    data: endpoint,
    creates: true,
  }),
  list: define({
    name: 'serverless.list',
    method: 'GET',
    path: '/v2/serverless',
    params: none,
    query: endpointListQuery,
    body: noBody,
    data: endpointList,
    creates: false,
  }),
  get: define({
    name: 'serverless.get',
    method: 'GET',
    path: '/v2/serverless/{id}',
    params: idParams,
    query: none,
    body: noBody,
    data: endpointSummary,
    creates: false,
  }),
  update: define({
    name: 'serverless.update',
    method: 'PATCH',
    path: '/v2/serverless/{id}',
    params: idParams,
    query: none,
    body: endpointUpdateRequest,
    data: endpointSummary,
    creates: false,
  }),
  delete: define({
    name: 'serverless.delete',
    method: 'DELETE',
    path: '/v2/serverless/{id}',
    params: idParams,
    query: none,
    body: noBody,
    data: nothing,
    creates: false,
  }),
  start: define({
    name: 'serverless.start',
    method: 'POST',
    path: '/v2/serverless/{id}/start',
    params: idParams,
    query: none,
    body: noBody,
    data: nothing,
    creates: false,
  }),
  stop: define({
    name: 'serverless.stop',
    method: 'POST',
    path: '/v2/serverless/{id}/stop',
    params: idParams,
    query: none,
    body: noBody,
    data: nothing,
    creates: false,
  }),
  scaleWorkers: define({
    name: 'serverless.scaleWorkers',
    method: 'PUT',
    path: '/v2/serverless/{id}/workers',
    params: idParams,
    query: workersQuery,
    body: noBody,
    data: nothing,
    creates: false,
  }),
  tasks,
};

const metrics = {
  cpu: define({
    name: 'metrics.cpu',
    method: 'GET',
    path: '/v2/metrics/cpu/pods/{pod_id}',
    params: metricsParams,
    query: metricsQuery,
    body: noBody,
    data: metricResponse('cpu_usage'),
    creates: false,
  }),
  gpu: define({
    name: 'metrics.gpu',
    method: 'GET',
    path: '/v2/metrics/gpu/pods/{pod_id}',
    params: metricsParams,
    query: metricsQuery,
    body: noBody,
    data: metricResponse('gpu_utilization'),
    creates: false,
  }),
  memory: define({
    name: 'metrics.memory',
    method: 'GET',
    path: '/v2/metrics/memory/pods/{pod_id}',
    params: metricsParams,
    query: metricsQuery,
    body: noBody,
    data: metricResponse('memory_usage'),
    creates: false,
  }),
  gpuMemory: define({
    name: 'metrics.gpuMemory',
    method: 'GET',
    path: '/v2/metrics/gpu/pods/{pod_id}/memory',
    params: metricsParams,
    query: metricsQuery,
    body: noBody,
    data: metricResponse('gpu_memory'),
    creates: false,
  }),
  // The service ignores start, end and step here, so the operation takes no query.
  storage: define({
    name: 'metrics.storage',
    method: 'GET',
    path: '/v2/metrics/storage/pods/{pod_id}',
    params: metricsParams,
    query: none,
    body: noBody,
    data: storageUsage,
    creates: false,
  }),
};

const legacyVms = {
  create: define({
    name: 'legacy.vms.create',
    method: 'POST',
    path: '/openapi/v1/vms/create',
    params: none,
    query: none,
    body: legacyVmCreateRequest,
    data: legacyVm,
    creates: true,
  }),
  terminate: define({
    name: 'legacy.vms.terminate',
    method: 'DELETE',
    path: '/openapi/v1/vms/{vmId}/terminate',
    params: legacyVmParams,
    query: none,
    body: noBody,
    data: nothing,
    creates: false,
  }),
  types: define({
    name: 'legacy.vms.types',
    method: 'GET',
    path: '/openapi/v1/vms/type',
    params: none,
    query: none,
    body: noBody,
    data: vmTypes,
    creates: false,
  }),
  get: define({
    name: 'legacy.vms.get',
    method: 'GET',
    path: '/openapi/v1/vms/{vmId}',
    params: legacyVmParams,
    query: none,
    body: noBody,
    data: legacyVm,
    creates: false,
  }),
  list: define({
    name: 'legacy.vms.list',
    method: 'POST',
    path: '/openapi/v1/vms/list',
    params: none,
    query: none,
    body: legacyVmListRequest,
    data: legacyVmList,
    creates: false,
  }),
};

const legacyPods = {
  create: define({
    name: 'legacy.pods.create',
    method: 'POST',
    path: '/openapi/v1/pods/create',
    params: none,
    query: none,
    body: legacyPodCreateRequest,
    data: legacyPodCreated,
    creates: true,
  }),
  resume: define({
    name: 'legacy.pods.resume',
    method: 'POST',
    path: '/openapi/v1/pods/resume/{podId}',
    params: legacyPodParams,
    query: none,
    body: noBody,
    data: nothing,
    creates: false,
  }),
  pause: define({
    name: 'legacy.pods.pause',
    method: 'POST',
    path: '/openapi/v1/pods/pause/{podId}',
    params: legacyPodParams,
    query: none,
    body: noBody,
    data: nothing,
    creates: false,
  }),
  delete: define({
    name: 'legacy.pods.delete',
    method: 'DELETE',
    path: '/openapi/v1/pods/{podId}',
    params: legacyPodParams,
    query: none,
    body: noBody,
    data: nothing,
    creates: false,
  }),
  // Routers must try the literal `/pods/list` before `/pods/{podId}`.
  list: define({
    name: 'legacy.pods.list',
    method: 'GET',
    path: '/openapi/v1/pods/list',
    params: none,
    query: none,
    body: noBody,
    data: legacyPodList,
    creates: false,
  }),
  get: define({
    name: 'legacy.pods.get',
    method: 'GET',
    path: '/openapi/v1/pods/{podId}',
    params: legacyPodParams,
    query: none,
    body: noBody,
    data: legacyPod,
    creates: false,
  }),
};

export const operations = {
  vms,
  pods,
  serverless,
  metrics,
  legacy: { vms: legacyVms, pods: legacyPods },
} as const;

type Tree = { readonly [key: string]: Operation | Tree };

function isOperation(node: Operation | Tree): node is Operation {
  return typeof node.name === 'string' && typeof node.path === 'string';
}

function flatten(tree: Tree): Operation[] {
  return Object.values(tree).flatMap((node) => (isOperation(node) ? [node] : flatten(node)));
}

/** Every operation, flat; literal paths come before templated siblings so routers can match in order. */
export const allOperations: readonly Operation[] = Object.freeze(flatten(operations));
