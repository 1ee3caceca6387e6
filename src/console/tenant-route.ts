// The other way to a resource's cloud object: through the Kubernetes API, as the caller's kubeconfig
// identity, to the operator's tenant API (docs/design.md §12). Taken when the caller holds no key of its
// own, as a tenant of a shared account does; the cluster's RBAC decides what it may read or submit.
import { z } from 'zod';
import type { PodMetrics } from '../api/pod-metrics.ts';
import { METRIC_NAMES, metricSeries, storageUsage } from '../api/schemas/metrics.ts';
import type { TaskSubmitRequest } from '../api/schemas/serverless.ts';
import { isStatus, type KubeClient } from '../kube/client.ts';
import { GROUP, resourceOf, serverlessEndpointKind, VERSION } from '../resources/kinds.ts';
import { splitId } from '../resources/serverless-task/adapter.ts';
import { TENANT_GROUP_VERSION } from '../tenant-api/group.ts';
import { CommandError, EXIT } from './errors.ts';

/** A custom resource reached through the tenant API. */
export interface TenantTarget {
  readonly kube: KubeClient;
  readonly plural: string;
  readonly namespace: string;
  readonly name: string;
}

function path(target: TenantTarget, subresource: string, item?: string): string {
  const base = `/apis/${TENANT_GROUP_VERSION}/namespaces/${encodeURIComponent(target.namespace)}/${target.plural}/${encodeURIComponent(target.name)}/${subresource}`;
  return item === undefined ? base : `${base}/${encodeURIComponent(item)}`;
}

const NO_KEY =
  "you hold no API key of this account (pass --api-key or set GPUCLOUD_API_KEY): it needs an API key you hold, or the operator's tenant API";

/** The apiserver's (or the tenant API's) refusal as the CLI's own error and exit code. */
export function explainStatus(error: unknown): never {
  // The apiserver knows no such group: the tenant API is not installed.
  if (isStatus(error, 404) && /the server could not find the requested resource/.test(error.message)) {
    throw new CommandError(
      `${NO_KEY}, which this cluster does not serve (tenantApi.enabled in the chart)`,
      EXIT.credentials,
    );
  }
  if (isStatus(error, 503)) {
    throw new CommandError(
      `${NO_KEY}, which does not answer now (is the operator running?): ${error.message}`,
      EXIT.cloud,
    );
  }
  if (isStatus(error, 404)) throw new CommandError(error.message, EXIT.notFound);
  if (isStatus(error, 401) || isStatus(error, 403)) {
    throw new CommandError(`${NO_KEY}, which refused: ${error.message}`, EXIT.credentials);
  }
  throw error;
}

export interface TenantLogOptions {
  readonly follow: boolean;
  readonly sinceMs?: number | undefined;
  readonly limit?: number | undefined;
  readonly keyword?: string | undefined;
  readonly signal: AbortSignal;
}

/** The pod's log lines as they arrive; a followed log ends when `signal` aborts (Ctrl-C). */
export async function tenantLogs(
  target: TenantTarget,
  options: TenantLogOptions,
  print: (line: string) => void,
): Promise<void> {
  const query = {
    ...(options.follow ? { follow: true } : {}),
    ...(options.sinceMs === undefined
      ? {}
      : { sinceSeconds: Math.max(1, Math.round(options.sinceMs / 1000)) }),
    ...(options.limit === undefined ? {} : { limit: options.limit }),
    ...(options.keyword === undefined ? {} : { keyword: options.keyword }),
  };
  try {
    for await (const line of target.kube.lines(path(target, 'log'), query, options.signal)) {
      if (line !== '') print(line);
    }
  } catch (error) {
    if (options.signal.aborted) return;
    explainStatus(error);
  }
}

// What the tenant API answers is what the cloud answered, read with the cloud client's own schemas.
const metricsAnswer = z.object({
  series: z.array(z.object({ metric_name: z.enum(METRIC_NAMES), series: z.array(metricSeries) })),
  storage: storageUsage,
});

export async function tenantMetrics(
  target: TenantTarget,
  window: { windowMs: number; step: string },
): Promise<PodMetrics> {
  return target.kube
    .request(metricsAnswer, {
      method: 'GET',
      path: path(target, 'metrics'),
      query: { window: `${Math.round(window.windowMs / 1000)}s`, step: window.step },
    })
    .catch(explainStatus);
}

/** A task as the tenant API answers it: what the cloud answered, as the tables read it. */
const taskRow = z.looseObject({
  taskId: z.string(),
  status: z.string(),
  deliveryStatus: z.string().optional(),
  deliveryAttempts: z.number().optional(),
  createdAt: z.number().optional(),
  error: z.string().nullish(),
  output: z.unknown().optional(),
});
export type TenantTask = z.output<typeof taskRow>;

export async function tenantListTasks(
  target: TenantTarget,
  status: string | undefined,
): Promise<TenantTask[]> {
  const items: TenantTask[] = [];
  for (let page = 1; ; page++) {
    const answer = await target.kube
      .request(z.looseObject({ items: z.array(taskRow), pages: z.coerce.number() }), {
        method: 'GET',
        path: path(target, 'tasks'),
        query: { ...(status === undefined ? {} : { status }), page, size: 100 },
      })
      .catch(explainStatus);
    items.push(...answer.items);
    if (page >= answer.pages) return items;
  }
}

/** The endpoint's tasks by lower-case status name. */
export async function tenantCountTasks(target: TenantTarget): Promise<Record<string, number>> {
  const answer = await target.kube
    .request(z.looseObject({ counts: z.record(z.string(), z.number()) }), {
      method: 'GET',
      path: path(target, 'tasks', 'count'),
    })
    .catch(explainStatus);
  return answer.counts;
}

export async function tenantGetTask(target: TenantTarget, taskId: string): Promise<TenantTask> {
  return target.kube
    .request(taskRow, { method: 'GET', path: path(target, 'tasks', taskId) })
    .catch(explainStatus);
}

export async function tenantSubmitTask(target: TenantTarget, request: TaskSubmitRequest): Promise<string> {
  const answer = await target.kube
    .request(z.looseObject({ taskId: z.string() }), {
      method: 'POST',
      path: path(target, 'tasks'),
      body: request,
    })
    .catch(explainStatus);
  return answer.taskId;
}

const serverlessTask = z.looseObject({
  spec: z.looseObject({ endpointRef: z.object({ name: z.string() }) }),
  status: z.looseObject({ id: z.string().optional() }).optional(),
});

/** A ServerlessTask's endpoint (as a tenant target) and its task id, read from the resource itself. */
export async function tenantTaskOf(task: TenantTarget): Promise<{ endpoint: TenantTarget; taskId: string }> {
  const found = await task.kube
    .request(serverlessTask, {
      method: 'GET',
      path: `/apis/${GROUP}/${VERSION}/namespaces/${encodeURIComponent(task.namespace)}/${task.plural}/${encodeURIComponent(task.name)}`,
    })
    .catch(explainStatus);
  const id = found.status?.id;
  if (!id) {
    throw new CommandError(
      `ServerlessTask ${task.namespace}/${task.name} has no status.id yet: it is not submitted (kubectl describe serverlesstask/${task.name} -n ${task.namespace})`,
      EXIT.notFound,
    );
  }
  return {
    endpoint: {
      ...task,
      plural: resourceOf(serverlessEndpointKind).plural,
      name: found.spec.endpointRef.name,
    },
    taskId: splitId(id).taskId,
  };
}
