import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { z } from 'zod';
import type { GpuCloudClient } from '../api/client.ts';
import { type ReadLogsOptions, readLogs } from '../api/pod-logs.ts';
import { type MetricsWindow, type PodMetrics, readPodMetrics } from '../api/pod-metrics.ts';
import type { TaskSubmitRequest } from '../api/schemas/serverless.ts';
import { collectionPath } from '../kube/resource-type.ts';
import { registrations, resourceOf } from '../resources/kinds.ts';
import { CommandError, EXIT } from './errors.ts';
import { type Printable, sparkline } from './output.ts';
import { type Connections, kubeClient, type Target } from './target.ts';

/** What a command reports while it waits (a spinner on a terminal, nothing otherwise). */
export interface Progress {
  update(text: string): void;
  done(): void;
}

export async function vmTypes(client: GpuCloudClient): Promise<Printable> {
  const types = await client.vms.types();
  const rows = types.flatMap(({ gpuType, regions }) =>
    regions.flatMap(({ region, types: items }) => items.map((item) => ({ gpuType, region, ...item }))),
  );
  rows.sort((a, b) => Number(a.pricePerHour) - Number(b.pricePerHour));
  return {
    value: rows,
    columns: [
      'vm type',
      'gpu',
      'gpus',
      'region',
      'price/h',
      'spot/h',
      'on demand',
      'spot',
      'cpus',
      'memory gb',
    ],
    rows: rows.map((row) => [
      row.vmTypeId,
      row.gpuType,
      row.gpuCount,
      row.region,
      `${row.pricePerHour} ${row.currency}`,
      row.spotPricePerHour,
      row.ondemandAvailable,
      row.spotAvailable,
      row.cpuCores,
      row.memoryInGb,
    ]),
  };
}

export interface OfferFilters {
  gpuTypes?: string[];
  regions?: string[];
  gpuCounts?: number[];
  isSpot?: boolean;
  minGpuMemoryInGb?: number;
  includeUnavailable?: boolean;
}

/** GPU offers, one row per GPU count option, cheapest per GPU-hour first. */
export async function offers(client: GpuCloudClient, filters: OfferFilters): Promise<Printable> {
  const found = [];
  for await (const offer of client.pods.searchGpusAll(filters)) {
    for (const option of offer.gpuCountOptions) {
      if (filters.gpuCounts && !filters.gpuCounts.includes(option.gpuCount)) continue;
      found.push({
        gpuType: offer.gpuType,
        region: offer.region,
        cloudType: offer.cloudType,
        isSpot: offer.isSpot,
        gpuCount: option.gpuCount,
        available: option.available,
        pricePerGpuPerHour: option.price.pricePerGpuPerHour,
        gpuPricePerHour: option.price.gpuPricePerHour,
        currency: option.price.currency,
      });
    }
  }
  found.sort((a, b) => Number(a.pricePerGpuPerHour) - Number(b.pricePerGpuPerHour));
  return {
    value: found,
    columns: ['gpu', 'region', 'cloud', 'spot', 'gpus', 'available', 'per gpu/h', 'total/h'],
    rows: found.map((o) => [
      o.gpuType,
      o.region,
      o.cloudType,
      o.isSpot,
      o.gpuCount,
      o.available,
      `${o.pricePerGpuPerHour} ${o.currency}`,
      o.gpuPricePerHour,
    ]),
  };
}

export type LogOptions = ReadLogsOptions;

/** Prints the pod's log lines; with `follow`, keeps reading new ones until interrupted (`readLogs`). */
export async function logs(
  target: Target,
  options: LogOptions,
  print: (line: string) => void,
): Promise<void> {
  const { client, id } = target;
  await readLogs((query) => client.pods.logs(id, query), options, print);
}

/**
 * Each series of the pod's metrics over the window: latest, minimum, maximum, and a sparkline. A window
 * with no sample in any series is not an empty table but "not there yet" (exit 3): the cloud samples a pod
 * once per step from when it starts, so for up to a step after it is Ready there is nothing to show.
 */
export async function metrics(target: Target, window: MetricsWindow): Promise<Printable> {
  const pod = target.resource === undefined ? `pod ${target.id}` : `GpuPod ${target.resource}`;
  return metricsTable(await readPodMetrics(target.client, target.id, window), window, pod);
}

/** The table of `metrics`, from what the cloud (or the tenant API, which reads it alike) answered. */
export function metricsTable(read: PodMetrics, window: MetricsWindow, pod: string): Printable {
  const series = [];
  for (const answer of read.series) {
    for (const each of answer.series) {
      const values = each.data_points.map((point) => point.value);
      const gpu = each.labels.gpu_show_index;
      series.push({
        metric: answer.metric_name,
        ...(gpu === undefined ? {} : { gpu }),
        points: each.data_points,
        latest: values.at(-1),
        min: values.length ? Math.min(...values) : undefined,
        max: values.length ? Math.max(...values) : undefined,
        spark: sparkline(values),
      });
    }
  }
  if (series.every((each) => each.points.length === 0)) {
    throw new CommandError(
      `the cloud has no metric samples for ${pod} in the last ${span(window.end - window.start)} yet: ` +
        `it samples a pod once every ${window.step}, the first up to ${window.step} after the pod starts ` +
        'running, so a pod that has just become Ready has none; try again shortly',
      EXIT.notFound,
    );
  }
  const storage = read.storage;
  return {
    value: { series: series.map(({ spark: _spark, ...rest }) => rest), storage: storage.ephemeral_storage },
    columns: ['metric', 'gpu', 'latest', 'min', 'max', 'over the window'],
    rows: [
      ...series.map((s) => [s.metric, s.gpu ?? '', round(s.latest), round(s.min), round(s.max), s.spark]),
      [
        'storage_used_bytes',
        '',
        storage.ephemeral_storage.used_bytes,
        '',
        storage.ephemeral_storage.total_bytes,
        `${Math.round(storage.ephemeral_storage.usage_ratio * 100)}% of the volume`,
      ],
    ],
  };
}

/** A duration as the CLI takes it: `1h`, `10m`, `90s`. */
function span(ms: number): string {
  for (const [unit, size] of [
    ['d', 86_400_000],
    ['h', 3_600_000],
    ['m', 60_000],
  ] as const) {
    if (ms % size === 0) return `${ms / size}${unit}`;
  }
  return `${Math.round(ms / 1000)}s`;
}

function round(value: number | undefined): number | undefined {
  return value === undefined ? undefined : Math.round(value * 100) / 100;
}

export async function submitTask(target: Target, request: TaskSubmitRequest): Promise<Printable> {
  const { taskId } = await target.client.serverless.tasks.submit(target.id, request);
  return submittedTable(taskId);
}

export function submittedTable(taskId: string): Printable {
  return { value: { taskId }, columns: ['task id'], rows: [[taskId]] };
}

/** What the task tables show of a task, from the cloud or from the tenant API. */
export interface TaskRow {
  readonly taskId: string;
  readonly status: string;
  readonly deliveryStatus?: string | undefined;
  readonly deliveryAttempts?: number | undefined;
  readonly createdAt?: number | undefined;
  readonly error?: string | null | undefined;
  readonly output?: unknown;
}

export async function listTasks(target: Target, status: string | undefined): Promise<Printable> {
  const tasks = [];
  const filter = status === undefined ? {} : { status: status as 'PROCESSING' };
  for await (const task of target.client.serverless.tasks.listAll(target.id, filter)) tasks.push(task);
  return taskListTable(tasks);
}

export function taskListTable(tasks: readonly TaskRow[]): Printable {
  return {
    value: tasks,
    columns: ['task id', 'status', 'delivery', 'attempts', 'created', 'error'],
    rows: tasks.map((t) => [
      t.taskId,
      t.status,
      t.deliveryStatus,
      t.deliveryAttempts,
      iso(t.createdAt),
      t.error ?? '',
    ]),
  };
}

export async function getTask(target: Target, taskId: string): Promise<Printable> {
  return taskTable(await target.client.serverless.tasks.get(target.id, taskId));
}

export function taskTable(task: TaskRow): Printable {
  return {
    value: task,
    columns: ['task id', 'status', 'delivery', 'attempts', 'error', 'output'],
    rows: [
      [
        task.taskId,
        task.status,
        task.deliveryStatus,
        task.deliveryAttempts,
        task.error ?? '',
        JSON.stringify(task.output),
      ],
    ],
  };
}

export async function countTasks(target: Target): Promise<Printable> {
  return countsTable(await target.client.serverless.tasks.count(target.id));
}

export function countsTable(counts: Readonly<Record<string, number>>): Printable {
  return { value: counts, columns: ['status', 'tasks'], rows: Object.entries(counts) };
}

/** Follows a task (read by `read`: the cloud's, or the tenant API's) until it is SUCCESS or FAILED; a FAILED task is exit code 5. */
export async function watchTask(
  read: (taskId: string) => Promise<TaskRow>,
  taskId: string,
  pollMs: number,
  progress: Progress,
  signal: AbortSignal,
): Promise<Printable> {
  for (;;) {
    const task = await read(taskId);
    if (task.status === 'SUCCESS' || task.status === 'FAILED') {
      progress.done();
      if (task.status === 'FAILED') {
        throw new CommandError(
          `task ${taskId} FAILED: ${task.error ?? 'the cloud gave no error'}`,
          EXIT.taskFailed,
        );
      }
      return {
        value: task,
        columns: ['task id', 'status', 'output'],
        rows: [[task.taskId, task.status, JSON.stringify(task.output)]],
      };
    }
    progress.update(`task ${taskId}: ${task.status}`);
    await new Promise((resolve) => setTimeout(resolve, pollMs));
    if (signal.aborted) throw new CommandError('interrupted', EXIT.cloud);
  }
}

/** The SSH command of a pod or VM, as an argument list (never a shell line). */
export function sshArguments(target: Target): string[] {
  const command = target.kind === 'GpuVm' ? target.status.sshTemplate : target.status.sshCommand;
  if (typeof command !== 'string' || command.trim() === '') {
    throw new CommandError(
      `${target.resource ?? target.id} has no SSH command yet (it shows once the cloud object is running)`,
      EXIT.notFound,
    );
  }
  const args = command.trim().split(/\s+/);
  if (args[0] !== 'ssh') throw new CommandError(`the cloud gave no ssh command: "${command}"`, EXIT.cloud);
  return args;
}

const run = promisify(execFile);

/** Runs `ssh` with the pod's arguments (and the user's, after them), as a child process. */
export async function execSsh(args: readonly string[], extra: readonly string[]): Promise<string> {
  const [program = 'ssh', ...rest] = args;
  const { stdout } = await run(program, [...rest, ...extra]);
  return stdout;
}

const listSchema = z.object({
  items: z.array(
    z.looseObject({
      kind: z.string().optional(),
      metadata: z.looseObject({ name: z.string(), namespace: z.string().optional() }),
      spec: z.looseObject({}).optional(),
      status: z.looseObject({}).optional(),
    }),
  ),
});

/**
 * Spend per resource and per namespace, from what the operator wrote in status: the hourly rate of what
 * runs now (a paused pod or a stopped VM or endpoint costs nothing per hour here) and the estimated cost
 * so far. No cloud call.
 */
export async function cost(connections: Connections, allNamespaces: boolean): Promise<Printable> {
  const kube = await kubeClient(connections);
  const namespace = allNamespaces ? undefined : (connections.namespace ?? 'default');
  const rows: Array<{
    namespace: string;
    kind: string;
    name: string;
    phase: string;
    perHour: number;
    soFar: number;
  }> = [];
  // The same reading of spec and status as the operator's fleet metrics.
  for (const { definition, usage } of registrations) {
    if (!usage) continue;
    const list = await kube.request(listSchema, {
      method: 'GET',
      path: collectionPath(resourceOf(definition), namespace),
    });
    for (const item of list.items) {
      const spent = usage(item);
      rows.push({
        namespace: item.metadata.namespace ?? '',
        kind: definition.kind,
        name: item.metadata.name,
        phase: String(item.status?.phase ?? ''),
        perHour: spent.dollarsPerHour,
        soFar: spent.dollarsSoFar,
      });
    }
  }
  const namespaces = new Map<string, { perHour: number; soFar: number }>();
  for (const row of rows) {
    const sum = namespaces.get(row.namespace) ?? { perHour: 0, soFar: 0 };
    namespaces.set(row.namespace, { perHour: sum.perHour + row.perHour, soFar: sum.soFar + row.soFar });
  }
  const money = (n: number) => n.toFixed(4);
  return {
    value: {
      resources: rows,
      namespaces: Object.fromEntries([...namespaces].map(([ns, sum]) => [ns, sum])),
    },
    columns: ['namespace', 'resource', 'phase', 'usd/h', 'usd so far'],
    rows: [
      ...rows.map((r) => [
        r.namespace,
        `${r.kind.toLowerCase()}/${r.name}`,
        r.phase,
        money(r.perHour),
        money(r.soFar),
      ]),
      ...[...namespaces].map(([ns, sum]) => [
        ns,
        '(namespace total)',
        '',
        money(sum.perHour),
        money(sum.soFar),
      ]),
    ],
  };
}

function iso(epochMs: number | undefined): string | undefined {
  return epochMs === undefined ? undefined : new Date(epochMs).toISOString();
}
