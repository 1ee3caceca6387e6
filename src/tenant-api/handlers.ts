// What each subresource does with the cloud object its resource holds. Every cloud call is first paid for
// from the account's tenant budget (`TenantLimits.spend`), then sent through the account's own client, and
// abandoned when the request's signal fires (the client went, or its deadline passed).
import { once } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { CloudApiError, GpuCloudError } from '../api/errors.ts';
import { readLogs } from '../api/pod-logs.ts';
import { metricsCalls, POD_METRICS, readPodMetrics } from '../api/pod-metrics.ts';
import { readQuery } from '../serving/query.ts';
import { ServingError, sendJson } from '../serving/status.ts';
import type { User } from '../serving/user.ts';
import { readBody } from './body.ts';
import { TENANT_GROUP_VERSION } from './group.ts';
import type { TenantLimits } from './limits.ts';
import { logQuery, metricsQuery, noQuery, taskListQuery, taskSubmission } from './query.ts';
import type { TenantRequest } from './request-path.ts';
import type { CloudTarget } from './targets.ts';

export interface HandlerContext {
  readonly request: TenantRequest;
  readonly target: CloudTarget;
  readonly user: User;
  readonly limits: TenantLimits;
  /** Aborts when the client goes away, or when the request's deadline passes. */
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

/** Pays for `calls` of the account's tenant budget, then makes them; abandoned when the request ends. */
async function cloudCall<T>(context: HandlerContext, calls: number, call: () => Promise<T>): Promise<T> {
  const { limits, target, signal } = context;
  await limits.spend(target.account.name, calls, signal);
  return abandonedOnAbort(call(), signal);
}

/**
 * `work`'s outcome, or `signal`'s reason as soon as it aborts: the caller goes on without it (a stuck cloud
 * call holds no request, nor the follow slot of one). The call itself ends with its own timeout.
 */
function abandonedOnAbort<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const abandon = () => reject(signal.reason);
    if (signal.aborted) abandon();
    else signal.addEventListener('abort', abandon, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', abandon));
  });
}

/** Writes `text`, waiting for the reader when its buffer is full; returns at once when the request ended. */
async function write(response: ServerResponse, text: string, signal: AbortSignal): Promise<void> {
  if (signal.aborted || response.write(text)) return;
  await once(response, 'drain', { signal }).catch(() => undefined);
}

/**
 * The pod's log as `text/plain`, one `<timestamp> <line>` a line, as `kubectl logs` prints it. Followed,
 * it is written page by page as the cloud gives it (never buffered whole: a slow reader holds back the
 * next read) until the client goes away; each open follow counts against its user's and account's limit.
 */
async function log(context: HandlerContext): Promise<void> {
  const { target, limits, signal, response, user, request } = context;
  const options = readQuery(logQuery, request.query);
  if (options.follow) {
    // The slot is the response's: freed when it closes, however the request ends.
    const release = limits.openStream(user.name, target.account.name);
    if (response.closed) release();
    else response.once('close', release);
  }
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
    (page) => cloudCall(context, 1, () => target.account.client.pods.logs(target.id, page)),
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
      return write(response, `${line}\n`, signal);
    },
  );
  start();
  response.end();
}

/** The pod's metrics over the window: each series asked for, and the storage used, as JSON. */
async function metrics(context: HandlerContext): Promise<void> {
  const { target, response, request } = context;
  const options = readQuery(metricsQuery, request.query);
  const names = options.series ?? POD_METRICS;
  const end = Date.now();
  const window = { start: end - options.window, end, step: options.step };
  const read = await cloudCall(context, metricsCalls(names), () =>
    readPodMetrics(target.account.client, target.id, window, names),
  );
  sendJson(
    response,
    200,
    {
      kind: 'GpuPodMetrics',
      apiVersion: TENANT_GROUP_VERSION,
      metadata: target.resource,
      window,
      ...read,
    },
    request.standard.pretty,
  );
}

/** One page of the endpoint's tasks (the cloud's paging: `page`, `size`, `pages`). */
async function listTasks(context: HandlerContext): Promise<void> {
  const { target, response, request } = context;
  const options = readQuery(taskListQuery, request.query);
  const page = await cloudCall(context, 1, () =>
    target.account.client.serverless.tasks.list(target.id, options),
  );
  sendJson(
    response,
    200,
    { kind: 'ServerlessTaskList', apiVersion: TENANT_GROUP_VERSION, ...page },
    request.standard.pretty,
  );
}

async function getTask(context: HandlerContext): Promise<void> {
  const { target, response, request } = context;
  readQuery(noQuery, request.query);
  const task = await cloudCall(context, 1, () =>
    target.account.client.serverless.tasks.get(target.id, request.item ?? ''),
  ).catch(
    notFoundAs(
      `task ${request.item} not found on ServerlessEndpoint ${target.resource.namespace}/${target.resource.name}`,
    ),
  );
  sendJson(
    response,
    200,
    { kind: 'ServerlessTask', apiVersion: TENANT_GROUP_VERSION, ...task },
    request.standard.pretty,
  );
}

async function countTasks(context: HandlerContext): Promise<void> {
  const { target, response, request } = context;
  readQuery(noQuery, request.query);
  const counts = await cloudCall(context, 1, () => target.account.client.serverless.tasks.count(target.id));
  sendJson(
    response,
    200,
    { kind: 'ServerlessTaskCounts', apiVersion: TENANT_GROUP_VERSION, metadata: target.resource, counts },
    request.standard.pretty,
  );
}

/**
 * Submits a task, exactly once per task id: the cloud refuses a second task under an id it has, and a
 * submit that failed in a way that may have landed is followed by a get of that id, so a retry of the
 * same request answers 409 AlreadyExists rather than submitting again. Without a `taskId` the cloud picks
 * one, and a retry is a new task: give one to retry safely.
 */
async function submitTask(context: HandlerContext): Promise<void> {
  const { target, response, request } = context;
  readQuery(noQuery, request.query);
  const parsed = taskSubmission.safeParse(await readJson(context.incoming));
  if (!parsed.success) {
    throw new ServingError(
      400,
      parsed.error.issues.map((i) => `${i.path.join('.') || 'body'}: ${i.message}`).join('; '),
    );
  }
  const submit = parsed.data;
  const tasks = target.account.client.serverless.tasks;
  const created = (taskId: string) =>
    sendJson(
      response,
      201,
      { kind: 'ServerlessTask', apiVersion: TENANT_GROUP_VERSION, taskId },
      request.standard.pretty,
    );
  try {
    created((await cloudCall(context, 1, () => tasks.submit(target.id, submit))).taskId);
  } catch (error) {
    const taskId = submit.taskId;
    if (
      !taskId ||
      !(error instanceof GpuCloudError) ||
      !(error instanceof CloudApiError || error.mayHaveTakenEffect)
    )
      throw error;
    const found = await cloudCall(context, 1, () => tasks.get(target.id, taskId)).catch(() => undefined);
    if (found === undefined) throw error;
    if (error instanceof CloudApiError) {
      throw new ServingError(
        409,
        `task ${taskId} already exists on ServerlessEndpoint ${target.resource.namespace}/${target.resource.name}: it is submitted once per id`,
      );
    }
    // The submit landed though its answer was lost.
    created(taskId);
  }
}

async function readJson(incoming: IncomingMessage): Promise<unknown> {
  const body = await readBody(incoming);
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    throw new ServingError(
      400,
      'the body is not JSON: send a task, e.g. {"taskId": "run_1", "input": {...}}',
    );
  }
}

function notFoundAs(message: string): (error: unknown) => never {
  return (error) => {
    if (error instanceof CloudApiError && error.kind === 'notFound') throw new ServingError(404, message);
    throw error;
  };
}
