import { randomUUID } from 'node:crypto';
import { ApiCode } from '../../api/codes.ts';
import type { TaskListQuery, TaskStatus, TaskSubmitRequest } from '../../api/schemas/index.ts';
import { TASK_STATUSES } from '../../api/schemas/index.ts';
import type { SimContext } from '../context.ts';
import { invalid, notFound, SimError } from '../errors.ts';
import { type Page, paginate } from '../paging.ts';
import { type EndpointRecord, runningWorkers, type TaskBoard, type TaskRecord } from './endpoint.ts';

const DEFAULT_WORKER_PORT = 8000;

export function newTaskBoard(): TaskBoard {
  return {
    tasks: new Map(),
    waiting: [],
    counts: { PROCESSING: 0, DELIVERED: 0, SUCCESS: 0, FAILED: 0 },
    busyWorkers: 0,
  };
}

/**
 * The task queue of QUEUE endpoints: a task waits PROCESSING until a running worker is free, is
 * DELIVERED to it one step later, and ends SUCCESS or FAILED one step after that. Its result is
 * then POSTed to the task's (or else the endpoint's) webhook, with retries.
 */
export class TaskQueue {
  readonly #ctx: SimContext;

  constructor(ctx: SimContext) {
    this.#ctx = ctx;
  }

  submit(endpoint: EndpointRecord, request: TaskSubmitRequest): TaskRecord {
    if (endpoint.config.serviceMode !== 'QUEUE') {
      throw invalid(
        `endpoint ${endpoint.id} runs in ${endpoint.config.serviceMode} mode; tasks go only to QUEUE endpoints`,
      );
    }
    if (endpoint.status !== 'INITIALIZING' && endpoint.status !== 'RUNNING') {
      throw new SimError(
        ApiCode.ServerlessUnavailable,
        `endpoint ${endpoint.id} is ${endpoint.status}; start it to submit tasks`,
      );
    }
    const taskId = request.taskId || randomUUID().replaceAll('-', '');
    const { board } = endpoint;
    if (board.tasks.has(taskId))
      throw invalid(`body.taskId: task ${taskId} already exists on endpoint ${endpoint.id}`);
    const now = this.#ctx.clock.now();
    const task: TaskRecord = {
      taskId,
      request,
      status: 'PROCESSING',
      workerUrl: null,
      output: null,
      error: null,
      deliveryStatus: 'INIT',
      deliveryAttempts: 0,
      createdAt: now,
      updatedAt: now,
      deliveredAt: null,
      pending: undefined,
    };
    board.tasks.set(taskId, task);
    board.counts.PROCESSING++;
    board.waiting.push(task);
    this.pump(endpoint);
    return task;
  }

  get(endpoint: EndpointRecord, taskId: string): TaskRecord {
    const task = endpoint.board.tasks.get(taskId);
    if (task === undefined) throw notFound(ApiCode.TaskNotFound, 'task', taskId);
    return task;
  }

  list(endpoint: EndpointRecord, query: TaskListQuery): Page<TaskRecord> {
    const all = [...endpoint.board.tasks.values()].filter(
      (task) => query.status === undefined || task.status === query.status,
    );
    return paginate(all, query.page, query.size);
  }

  /** Counts keyed by lower-case status name, every status present. */
  counts(endpoint: EndpointRecord): Record<string, number> {
    return Object.fromEntries(
      TASK_STATUSES.map((status) => [status.toLowerCase(), endpoint.board.counts[status]]),
    );
  }

  /** Hands waiting tasks to free workers; called whenever a worker may have become free. */
  pump(endpoint: EndpointRecord): void {
    const { board } = endpoint;
    while (board.waiting.length > 0 && board.busyWorkers < runningWorkers(endpoint)) {
      const task = board.waiting.shift() as TaskRecord;
      board.busyWorkers++;
      const worker = board.busyWorkers;
      this.#ctx.steps.schedule(task, () => this.#deliver(endpoint, task, worker));
    }
  }

  /** Forgets every task of a deleted endpoint. */
  drop(endpoint: EndpointRecord): void {
    for (const task of endpoint.board.tasks.values()) this.#ctx.steps.cancel(task);
    endpoint.board.tasks.clear();
    endpoint.board.waiting.length = 0;
  }

  #deliver(endpoint: EndpointRecord, task: TaskRecord, worker: number): void {
    const { workerPort = DEFAULT_WORKER_PORT, processUri = '/' } = task.request;
    task.workerUrl = `http://worker-${worker}.${endpoint.domain ?? endpoint.id}:${workerPort}${processUri}`;
    this.#move(endpoint, task, 'DELIVERED');
    this.#ctx.steps.schedule(task, () => this.#finish(endpoint, task));
  }

  #finish(endpoint: EndpointRecord, task: TaskRecord): void {
    if (this.#ctx.faults.taskFails()) {
      task.error = 'the worker failed while processing the task (simulated fault)';
      this.#move(endpoint, task, 'FAILED');
    } else {
      task.output = { echo: task.request.input ?? null };
      this.#move(endpoint, task, 'SUCCESS');
    }
    endpoint.board.busyWorkers--;
    this.#sendResult(endpoint, task);
    this.pump(endpoint);
  }

  #move(endpoint: EndpointRecord, task: TaskRecord, status: TaskStatus): void {
    endpoint.board.counts[task.status]--;
    endpoint.board.counts[status]++;
    task.status = status;
    task.updatedAt = this.#ctx.clock.now();
  }

  #sendResult(endpoint: EndpointRecord, task: TaskRecord): void {
    const url = task.request.webhook ?? endpoint.config.webhook;
    if (url === null) return;
    const { webhookAuthKey } = task.request;
    const body = {
      taskId: task.taskId,
      endpointId: endpoint.id,
      status: task.status,
      output: task.output,
      error: task.error,
      timestamp: String(this.#ctx.clock.now()),
    };
    this.#ctx.courier.send(
      url,
      body,
      webhookAuthKey === undefined ? {} : { 'X-API-Key': webhookAuthKey },
      (result) => {
        const now = this.#ctx.clock.now();
        task.deliveryAttempts = result.attempt;
        task.deliveryStatus = result.ok ? 'SUCCESS' : result.final ? 'MAX_RETRIES_EXCEEDED' : 'FAILED';
        if (result.ok) task.deliveredAt = now;
        task.updatedAt = now;
      },
    );
  }
}
