// What each subresource does with the cloud object its resource holds. Every cloud call is first paid for
// from the account's tenant budget (`TenantLimits.spend`), then sent through the account's own client.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { z } from 'zod';
import { CloudApiError, GpuCloudError } from '../api/errors.ts';
import { readLogs } from '../api/pod-logs.ts';
import { metricsCalls, POD_METRICS, readPodMetrics } from '../api/pod-metrics.ts';
import { MAX_PAGE_SIZE } from '../api/schemas/common.ts';
import { MAX_METRIC_WINDOW_MS, METRIC_STEPS } from '../api/schemas/metrics.ts';
import { TASK_STATUSES, taskSubmitRequest } from '../api/schemas/serverless.ts';
import type { User } from './front-proxy.ts';
import { TENANT_GROUP_VERSION } from './group.ts';
import type { TenantLimits } from './limits.ts';
import type { TenantRequest } from './request-path.ts';
import { sendJson, TenantApiError } from './status.ts';
import type { CloudTarget } from './targets.ts';

export interface HandlerContext {
  readonly request: TenantRequest;
  readonly target: CloudTarget;
  readonly user: User;
  readonly limits: TenantLimits;
  /** Aborts when the client goes away. */
  readonly signal: AbortSignal;
  /** How often a followed log is read again. */
  readonly followPollMs: number;
  readonly incoming: IncomingMessage;
  readonly response: ServerResponse;
}

export async function handle(context: HandlerContext): Promise<void> {
  const { subresource } = context.request.attributes;
  if (subresource === 'log') return log(context);
  if (subresource === 'metrics') return metrics(context);
  if (context.request.attributes.verb === 'create') return submitTask(context);
  // The cloud's own path: `count` is a task id the cloud never answers by id either.
  if (context.request.item === 'count') return countTasks(context);
  return context.request.item === undefined ? listTasks(context) : getTask(context);
}

/** Query parameters read as the schema says, or a 400 naming each one that is wrong. */
function query<S extends z.ZodType>(schema: S, params: URLSearchParams): z.output<S> {
  const parsed = schema.safeParse(Object.fromEntries(params));
  if (parsed.success) return parsed.data;
  const problems = parsed.error.issues.map((issue) => `${issue.path.join('.') || 'query'}: ${issue.message}`);
  throw new TenantApiError(400, problems.join('; '));
}

const flag = z.enum(['true', 'false', '1', '0']).transform((text) => text === 'true' || text === '1');
const count = z.coerce.number().int('must be a whole number').min(1);

const logQuery = z.strictObject({
  follow: flag.optional(),
  sinceSeconds: count.optional(),
  limit: count.optional(),
  keyword: z.string().min(1).optional(),
});

/**
 * The pod's log as `text/plain`, one `<timestamp> <line>` a line, as `kubectl logs` prints it. Followed,
 * it is written page by page as the cloud gives it (never buffered whole: a slow reader holds back the
 * next read) until the client goes away; each open follow counts against its user's and account's limit.
 */
async function log(context: HandlerContext): Promise<void> {
  const { target, limits, signal, response, user } = context;
  const options = query(logQuery, context.request.query);
  const release = options.follow ? limits.openStream(user.name, target.account.name) : () => undefined;
  try {
    let started = false;
    const start = () => {
      if (started) return;
      started = true;
      response.writeHead(200, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' });
      // Headers at once: the client knows the stream is open before the first line.
      response.flushHeaders();
    };
    if (options.follow) start();
    await readLogs(
      async (page) => {
        await limits.spend(target.account.name, 1, signal);
        return target.account.client.pods.logs(target.id, page);
      },
      {
        follow: options.follow ?? false,
        sinceMs: options.sinceSeconds === undefined ? undefined : options.sinceSeconds * 1000,
        limit: options.limit,
        keyword: options.keyword,
        pollMs: context.followPollMs,
        signal,
      },
      (line) => {
        start();
        if (response.write(`${line}\n`)) return;
        return new Promise<void>((resolve) => {
          const done = () => {
            response.off('drain', done);
            signal.removeEventListener('abort', done);
            resolve();
          };
          response.on('drain', done);
          signal.addEventListener('abort', done, { once: true });
        });
      },
    );
    start();
    response.end();
  } finally {
    release();
  }
}

const metricsQuery = z
  .strictObject({
    window: z
      .string()
      .regex(/^\d+[smhd]$/, 'a duration such as 90s, 10m, 1h or 2d')
      .default('1h')
      .transform(durationMs),
    step: z.enum(METRIC_STEPS).optional(),
    series: z
      .string()
      .transform((text) => text.split(','))
      .pipe(z.array(z.enum(POD_METRICS)))
      .optional(),
  })
  .transform((q) => ({ ...q, step: q.step ?? (q.window <= 3_600_000 ? ('30s' as const) : ('5m' as const)) }))
  .refine((q) => q.window <= MAX_METRIC_WINDOW_MS[q.step], {
    message:
      'the window is longer than the step allows (30s: 3h, 5m: 12h, 15m: 2d, 1h: 7d, 4h: 30d, 1d: 90d)',
    path: ['window'],
  });

function durationMs(text: string): number {
  const unit = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 }[text.slice(-1) as 's' | 'm' | 'h' | 'd'];
  return Number(text.slice(0, -1)) * unit;
}

/** The pod's metrics over the window: each series asked for, and the storage used, as JSON. */
async function metrics(context: HandlerContext): Promise<void> {
  const { target, limits, signal, response } = context;
  const options = query(metricsQuery, context.request.query);
  const names = options.series ?? POD_METRICS;
  await limits.spend(target.account.name, metricsCalls(names), signal);
  const end = Date.now();
  const window = { start: end - options.window, end, step: options.step };
  const read = await readPodMetrics(target.account.client, target.id, window, names);
  sendJson(response, 200, {
    kind: 'GpuPodMetrics',
    apiVersion: TENANT_GROUP_VERSION,
    metadata: target.resource,
    window,
    ...read,
  });
}

const listQuery = z.strictObject({
  status: z.enum(TASK_STATUSES).optional(),
  page: count.optional(),
  size: count.max(MAX_PAGE_SIZE).optional(),
});

/** One page of the endpoint's tasks (the cloud's paging: `page`, `size`, `pages`). */
async function listTasks(context: HandlerContext): Promise<void> {
  const { target, limits, signal, response } = context;
  const options = query(listQuery, context.request.query);
  await limits.spend(target.account.name, 1, signal);
  const page = await target.account.client.serverless.tasks.list(target.id, options);
  sendJson(response, 200, { kind: 'ServerlessTaskList', apiVersion: TENANT_GROUP_VERSION, ...page });
}

async function getTask(context: HandlerContext): Promise<void> {
  const { target, limits, signal, response, request } = context;
  query(z.strictObject({}), request.query);
  await limits.spend(target.account.name, 1, signal);
  const task = await target.account.client.serverless.tasks
    .get(target.id, request.item ?? '')
    .catch(
      notFoundAs(
        `task ${request.item} not found on ServerlessEndpoint ${target.resource.namespace}/${target.resource.name}`,
      ),
    );
  sendJson(response, 200, { kind: 'ServerlessTask', apiVersion: TENANT_GROUP_VERSION, ...task });
}

async function countTasks(context: HandlerContext): Promise<void> {
  const { target, limits, signal, response, request } = context;
  query(z.strictObject({}), request.query);
  await limits.spend(target.account.name, 1, signal);
  const counts = await target.account.client.serverless.tasks.count(target.id);
  sendJson(response, 200, {
    kind: 'ServerlessTaskCounts',
    apiVersion: TENANT_GROUP_VERSION,
    metadata: target.resource,
    counts,
  });
}

const BODY_LIMIT_BYTES = 1024 * 1024;

/**
 * Submits a task, exactly once per task id: the cloud refuses a second task under an id it has, and a
 * submit that failed in a way that may have landed is followed by a get of that id, so a retry of the
 * same request answers 409 AlreadyExists rather than submitting again. Without a `taskId` the cloud picks
 * one, and a retry is a new task: give one to retry safely.
 */
async function submitTask(context: HandlerContext): Promise<void> {
  const { target, limits, signal, response } = context;
  query(z.strictObject({}), context.request.query);
  const parsed = taskSubmitRequest.safeParse(await readJson(context.incoming));
  if (!parsed.success) {
    throw new TenantApiError(
      400,
      parsed.error.issues.map((i) => `${i.path.join('.') || 'body'}: ${i.message}`).join('; '),
    );
  }
  const submit = parsed.data;
  const tasks = target.account.client.serverless.tasks;
  await limits.spend(target.account.name, 1, signal);
  try {
    const { taskId } = await tasks.submit(target.id, submit);
    sendJson(response, 201, { kind: 'ServerlessTask', apiVersion: TENANT_GROUP_VERSION, taskId });
  } catch (error) {
    const taskId = submit.taskId;
    if (
      !taskId ||
      !(error instanceof GpuCloudError) ||
      !(error instanceof CloudApiError || error.mayHaveTakenEffect)
    )
      throw error;
    await limits.spend(target.account.name, 1, signal);
    const found = await tasks.get(target.id, taskId).catch(() => undefined);
    if (found === undefined) throw error;
    if (error instanceof CloudApiError) {
      throw new TenantApiError(
        409,
        `task ${taskId} already exists on ServerlessEndpoint ${target.resource.namespace}/${target.resource.name}: it is submitted once per id`,
      );
    }
    // The submit landed though its answer was lost.
    sendJson(response, 201, { kind: 'ServerlessTask', apiVersion: TENANT_GROUP_VERSION, taskId });
  }
}

async function readJson(incoming: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of incoming) {
    size += (chunk as Buffer).length;
    if (size > BODY_LIMIT_BYTES)
      throw new TenantApiError(400, `the body is larger than ${BODY_LIMIT_BYTES} bytes`);
    chunks.push(chunk as Buffer);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw new TenantApiError(
      400,
      'the body is not JSON: send a task, e.g. {"taskId": "run_1", "input": {...}}',
    );
  }
}

function notFoundAs(message: string): (error: unknown) => never {
  return (error) => {
    if (error instanceof CloudApiError && error.kind === 'notFound') throw new TenantApiError(404, message);
    throw error;
  };
}
