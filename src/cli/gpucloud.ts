#!/usr/bin/env node
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { GpuCloudClient } from '../api/client.ts';
import {
  cost,
  countTasks,
  execSsh,
  getTask,
  listTasks,
  logs,
  metrics,
  offers,
  sshArguments,
  submitTask,
  vmTypes,
  watchTask,
} from '../console/commands.ts';
import { EXIT, explain, usageError } from '../console/errors.ts';
import { OUTPUT_FORMATS, type OutputFormat, type Printable, render } from '../console/output.ts';
import { progressOn } from '../console/progress.ts';
import { type Connections, explicitCredentials, resolveTarget, type Target } from '../console/target.ts';
import { splitId } from '../resources/serverless-task/adapter.ts';

const USAGE = `usage: gpucloud <command> [arguments] [flags]     (as a kubectl plugin: kubectl gpucloud ...)

Resources are named as kubectl names them (gpupod/NAME, gpuvm/NAME, sle/NAME) in the kubeconfig's
cluster, or by a raw cloud id with --id.

  logs POD [--follow] [--since 10m] [--limit N]     a pod's log, following its cursor with --follow
  metrics POD [--window 1h] [--step 5m]             cpu, gpu, memory, gpu memory and storage, with sparklines
  offers [--gpu T]... [--region R]... [--count N]... [--spot | --on-demand] [--min-vram GB] [--all]
                                                    GPUs to rent, cheapest per GPU-hour first
  vm-types                                          VM types with prices and availability
  tasks submit ENDPOINT [-f FILE | -f -] [--task-id ID] [--webhook URL] [--process-uri /p] [--worker-port N]
  tasks list ENDPOINT [--status S] | tasks get ENDPOINT TASK | tasks count ENDPOINT | tasks watch ENDPOINT TASK
  tasks get|watch serverlesstask/NAME    (the task a ServerlessTask submitted, with its whole output)
  ssh POD|VM [--exec [-- ssh arguments]]            print the SSH command, or run it (no shell involved)
  cost [-A]                                         spend per hour and so far, per resource and namespace

Flags: -n NAMESPACE  -A (all namespaces)  --kubeconfig FILE  --context NAME  -o table|json|yaml
       --id ID  --api-key KEY (or GPUCLOUD_API_KEY)  --api-url URL (or GPUCLOUD_API_URL)

A resource's key is read from its ProviderConfig's Secret when your own RBAC lets you read it; else
--api-key or GPUCLOUD_API_KEY. Tenants of a shared account get no key from the cluster.
Exit codes: 0 ok, 1 the cloud failed or refused, 2 bad command line, 3 not found (or no status.id yet),
4 no key or a refused key, 5 a watched task FAILED.`;

const OPTIONS = {
  namespace: { type: 'string', short: 'n' },
  'all-namespaces': { type: 'boolean', short: 'A' },
  kubeconfig: { type: 'string' },
  context: { type: 'string' },
  output: { type: 'string', short: 'o' },
  id: { type: 'string' },
  'api-key': { type: 'string' },
  'api-url': { type: 'string' },
  follow: { type: 'boolean', short: 'f' },
  since: { type: 'string' },
  limit: { type: 'string' },
  window: { type: 'string' },
  step: { type: 'string' },
  gpu: { type: 'string', multiple: true },
  region: { type: 'string', multiple: true },
  count: { type: 'string', multiple: true },
  spot: { type: 'boolean' },
  'on-demand': { type: 'boolean' },
  'min-vram': { type: 'string' },
  all: { type: 'boolean' },
  file: { type: 'string' },
  'task-id': { type: 'string' },
  webhook: { type: 'string' },
  'process-uri': { type: 'string' },
  'worker-port': { type: 'string' },
  status: { type: 'string' },
  exec: { type: 'boolean' },
  'poll-ms': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

type Values = ReturnType<typeof parse>['values'];

function parse(argv: string[]) {
  return parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
}

async function main(argv: string[]): Promise<number> {
  const dash = argv.indexOf('--');
  const [ours, passed] = dash < 0 ? [argv, []] : [argv.slice(0, dash), argv.slice(dash + 1)];
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(ours);
  } catch (error) {
    throw usageError(`${(error as Error).message}\n\n${USAGE}`);
  }
  const { values, positionals } = parsed;
  const [command, ...rest] = positionals;
  if (values.help || command === undefined || command === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return command === undefined && !values.help ? EXIT.usage : EXIT.ok;
  }
  const format = outputFormat(values.output);
  const connections: Connections = {
    kubeconfig: values.kubeconfig,
    context: values.context,
    namespace: values.namespace,
    apiKey: values['api-key'],
    apiUrl: values['api-url'],
    env: process.env,
  };
  const print = (printable: Printable): void => {
    process.stdout.write(render(printable, format));
  };
  const abort = new AbortController();
  process.once('SIGINT', () => abort.abort());
  const target = (kinds: Parameters<typeof resolveTarget>[2], ref: string | undefined) =>
    resolveTarget(ref, values.id, kinds, connections);
  const pollMs = whole(values['poll-ms'], 'poll-ms') ?? 1000;
  switch (command) {
    case 'vm-types':
      return withClient(cloud(connections), async (client) => print(await vmTypes(client)));
    case 'offers':
      return withClient(cloud(connections), async (client) =>
        print(await offers(client, offerFilters(values))),
      );
    case 'logs':
      return withTarget(await target(['GpuPod'], rest[0]), (t) =>
        logs(
          t,
          {
            follow: values.follow === true,
            sinceMs: duration(values.since, 'since'),
            limit: whole(values.limit, 'limit'),
            pollMs,
            signal: abort.signal,
          },
          (line) => process.stdout.write(`${line}\n`),
        ),
      );
    case 'metrics': {
      const windowMs = duration(values.window, 'window') ?? 3_600_000;
      const step = stepOf(values.step ?? (windowMs <= 3_600_000 ? '30s' : '5m'));
      const end = Date.now();
      return withTarget(await target(['GpuPod'], rest[0]), async (t) =>
        print(await metrics(t, { start: end - windowMs, end, step })),
      );
    }
    case 'tasks':
      return tasks(rest, values, target, print, pollMs, abort.signal);
    case 'ssh':
      return withTarget(await target(['GpuPod', 'GpuVm'], rest[0]), async (t) => {
        const args = sshArguments(t);
        process.stdout.write(values.exec ? await execSsh(args, passed) : `${args.join(' ')}\n`);
      });
    case 'cost':
      print(await cost(connections, values['all-namespaces'] === true));
      return EXIT.ok;
    default:
      throw usageError(`unknown command "${command}"\n\n${USAGE}`);
  }
}

async function tasks(
  rest: string[],
  values: Values,
  target: (kinds: Parameters<typeof resolveTarget>[2], ref: string | undefined) => Promise<Target>,
  print: (printable: Printable) => void,
  pollMs: number,
  signal: AbortSignal,
): Promise<number> {
  const [action, endpoint, taskId] = rest;
  const needTask = () => {
    if (!taskId) throw usageError(`tasks ${action} takes ENDPOINT TASK_ID`);
    return taskId;
  };
  const resolved = () => target(['ServerlessEndpoint'], endpoint);
  // A ServerlessTask's status id names its endpoint and its task.
  const taskTarget = async (): Promise<[Target, string]> => {
    const t = await target(['ServerlessEndpoint', 'ServerlessTask'], endpoint);
    if (t.kind !== 'ServerlessTask') return [t, needTask()];
    const { endpointId, taskId } = splitId(t.id);
    return [{ ...t, id: endpointId }, taskId];
  };
  switch (action) {
    case 'submit': {
      const input = await readInput(values.file);
      return withTarget(await resolved(), async (t) =>
        print(
          await submitTask(t, {
            input,
            ...(values['task-id'] ? { taskId: values['task-id'] } : {}),
            ...(values.webhook ? { webhook: values.webhook } : {}),
            ...(values['process-uri'] ? { processUri: values['process-uri'] } : {}),
            ...(values['worker-port'] ? { workerPort: whole(values['worker-port'], 'worker-port') } : {}),
          }),
        ),
      );
    }
    case 'list':
      return withTarget(await resolved(), async (t) => print(await listTasks(t, values.status)));
    case 'get': {
      const [t, id] = await taskTarget();
      return withTarget(t, async () => print(await getTask(t, id)));
    }
    case 'count':
      return withTarget(await resolved(), async (t) => print(await countTasks(t)));
    case 'watch': {
      const [t, id] = await taskTarget();
      return withTarget(t, async () =>
        print(await watchTask(t, id, pollMs, progressOn(process.stderr), signal)),
      );
    }
    default:
      throw usageError('tasks takes submit, list, get, count or watch');
  }
}

/** The task input: JSON from a file, or from standard input with `-f -` (or no -f and a pipe). */
async function readInput(file: string | undefined): Promise<unknown> {
  let text: string;
  if (file === undefined || file === '-') {
    if (file === undefined && process.stdin.isTTY)
      throw usageError('give the task input with -f FILE or -f -');
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    text = Buffer.concat(chunks).toString('utf8');
  } else {
    text = await readFile(file, 'utf8');
  }
  try {
    return JSON.parse(text);
  } catch {
    throw usageError(`the task input is not JSON${file && file !== '-' ? ` (${file})` : ''}`);
  }
}

function cloud(connections: Connections): GpuCloudClient {
  const { apiKey, apiUrl } = explicitCredentials(connections, 'this command');
  return new GpuCloudClient({ baseUrl: apiUrl, apiKey, retry: { maxRetries: 2 } });
}

async function withClient(client: GpuCloudClient, work: (client: GpuCloudClient) => Promise<void>) {
  try {
    await work(client);
    return EXIT.ok;
  } finally {
    await client.close();
  }
}

async function withTarget(target: Target, work: (target: Target) => Promise<void>) {
  return withClient(target.client, () => work(target));
}

function offerFilters(values: Values) {
  if (values.spot && values['on-demand']) throw usageError('--spot and --on-demand exclude each other');
  return {
    ...(values.gpu ? { gpuTypes: values.gpu } : {}),
    ...(values.region ? { regions: values.region } : {}),
    ...(values.count ? { gpuCounts: values.count.map((count) => whole(count, 'count') ?? 1) } : {}),
    ...(values.spot ? { isSpot: true } : values['on-demand'] ? { isSpot: false } : {}),
    ...(values['min-vram'] ? { minGpuMemoryInGb: whole(values['min-vram'], 'min-vram') } : {}),
    ...(values.all ? { includeUnavailable: true } : {}),
  };
}

function outputFormat(value: string | undefined): OutputFormat {
  const format = value ?? 'table';
  if (!(OUTPUT_FORMATS as readonly string[]).includes(format)) {
    throw usageError(`-o takes ${OUTPUT_FORMATS.join(', ')}, not "${format}"`);
  }
  return format as OutputFormat;
}

function whole(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value)) throw usageError(`--${flag} takes a whole number, not "${value}"`);
  return Number(value);
}

const UNITS: Readonly<Record<string, number>> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `90s`, `10m`, `2h`, `1d` in milliseconds. */
function duration(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  const match = /^(\d+)([smhd])$/.exec(value);
  if (!match) throw usageError(`--${flag} takes a duration such as 90s, 10m, 2h or 1d, not "${value}"`);
  return Number(match[1]) * (UNITS[match[2] ?? 's'] ?? 1000);
}

const STEPS = ['30s', '5m', '15m', '1h', '4h', '1d'] as const;

function stepOf(value: string): (typeof STEPS)[number] {
  const step = STEPS.find((candidate) => candidate === value);
  if (!step) throw usageError(`--step takes ${STEPS.join(', ')}, not "${value}"`);
  return step;
}

try {
  process.exitCode = await main(process.argv.slice(2));
} catch (error) {
  const { message, exitCode } = explain(error);
  process.stderr.write(`error: ${message}\n`);
  process.exitCode = exitCode;
}
