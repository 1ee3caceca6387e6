import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { GpuCloudClient } from '../api/client.ts';
import { splitId } from '../resources/serverless-task/adapter.ts';
import {
  cost,
  countsTable,
  countTasks,
  execSsh,
  getTask,
  listTasks,
  logs,
  metrics,
  metricsTable,
  offers,
  sshArguments,
  submitTask,
  submittedTable,
  type TaskRow,
  taskListTable,
  taskTable,
  vmTypes,
  watchTask,
} from './commands.ts';
import { EXIT, explain, usageError } from './errors.ts';
import { IMPORT_FLAGS, IMPORT_NOTES, runImport } from './import-command.ts';
import { readManifests } from './manifests.ts';
import { OUTPUT_FORMATS, type OutputFormat, type Printable, render } from './output.ts';
import { placementOffers } from './placement-offers.ts';
import { plan } from './plan.ts';
import { progressOn } from './progress.ts';
import { resume } from './resume.ts';
import {
  type Connections,
  explicitCredentials,
  type Route,
  resolveRoute,
  resolveTarget,
  type Target,
} from './target.ts';
import {
  type TenantTarget,
  tenantCountTasks,
  tenantGetTask,
  tenantListTasks,
  tenantLogs,
  tenantMetrics,
  tenantSubmitTask,
  tenantTaskOf,
} from './tenant-route.ts';

type Flag = {
  readonly type: 'string' | 'boolean';
  readonly short?: string;
  readonly multiple?: boolean;
  /** The value's placeholder in help, for a string flag. */
  readonly value?: string;
  readonly help: string;
};

interface Command {
  /** Its arguments and flags, as `gpucloud --help` lists it and `gpucloud <command> --help` starts. */
  readonly synopsis: string;
  readonly summary: string;
  /** Flags of this command only; every command takes GLOBAL_FLAGS too. */
  readonly flags: Readonly<Record<string, Flag>>;
  /** More to say in `gpucloud <command> --help`. */
  readonly notes?: string;
}

// A short flag means one thing in a command, as in kubectl: -f is the input file of `tasks submit` and the
// manifests of `plan` (kubectl apply -f), and --follow of `logs` (kubectl logs -f); no command takes both.
const COMMANDS: Readonly<Record<string, Command>> = {
  logs: {
    synopsis: 'logs POD [-f] [--since 10m] [--limit N] [--keyword TEXT]',
    summary: "a pod's log; -f (--follow) keeps reading it",
    flags: {
      follow: {
        type: 'boolean',
        short: 'f',
        help: "keep reading new lines from the log's cursor until Ctrl-C (as kubectl logs -f)",
      },
      since: { type: 'string', value: 'DURATION', help: 'only lines newer than this: 90s, 10m, 2h or 1d' },
      limit: { type: 'string', value: 'N', help: 'at most N lines' },
      keyword: { type: 'string', value: 'TEXT', help: 'only lines that contain TEXT (the cloud filters)' },
    },
  },
  metrics: {
    synopsis: 'metrics POD [--window 1h] [--step 30s]',
    summary: 'CPU, GPU, memory, GPU memory and storage, with sparklines',
    flags: {
      window: {
        type: 'string',
        value: 'DURATION',
        help: 'how far back from now: 1h by default (90s, 10m, 2h, 1d)',
      },
      step: {
        type: 'string',
        value: 'STEP',
        help: 'one sample per 30s, 5m, 15m, 1h, 4h or 1d: 30s for a window up to 1h, else 5m',
      },
    },
    notes:
      'The cloud samples a pod once per step, the first up to one step after the pod starts: until then\n' +
      'there is nothing to show, and metrics says so and exits 3, as for a resource not found yet.',
  },
  offers: {
    synopsis:
      'offers [--gpu T]... [--region R]... [--count N]... [--spot | --on-demand] [--min-vram GB] [--all] | -f FILE',
    summary: 'GPUs to rent, cheapest per GPU-hour first',
    flags: {
      gpu: { type: 'string', multiple: true, value: 'TYPE', help: 'this GPU type only (repeat for more)' },
      region: { type: 'string', multiple: true, value: 'REGION', help: 'this region only (repeat for more)' },
      count: { type: 'string', multiple: true, value: 'N', help: 'this many GPUs only (repeat for more)' },
      spot: { type: 'boolean', help: 'spot offers only' },
      'on-demand': { type: 'boolean', help: 'on-demand offers only' },
      'min-vram': { type: 'string', value: 'GB', help: 'GPUs with at least this much memory' },
      all: { type: 'boolean', help: 'unavailable offers too' },
      file: {
        type: 'string',
        short: 'f',
        multiple: true,
        value: 'FILE',
        help:
          'GpuPod manifests with spec.placement: the offers each accepts, in the order\n' +
          'placement tries them, and its pick now (-f - for standard input)',
      },
    },
  },
  'vm-types': {
    synopsis: 'vm-types',
    summary: 'VM types with prices and availability',
    flags: {},
  },
  'tasks submit': {
    synopsis:
      'tasks submit ENDPOINT [-f FILE | -f -] [--task-id ID] [--webhook URL] [--process-uri /p] [--worker-port N]',
    summary: 'submit a task to a QUEUE endpoint; prints its id',
    flags: {
      file: {
        type: 'string',
        short: 'f',
        value: 'FILE',
        help:
          'the task input, a JSON file (as kubectl apply -f);\n' +
          '"-f -" reads it from standard input, as does no -f with a pipe',
      },
      'task-id': {
        type: 'string',
        value: 'ID',
        help: 'the task id (A-Z a-z 0-9 _); the cloud picks one without it',
      },
      webhook: { type: 'string', value: 'URL', help: "where the cloud posts the task's result" },
      'process-uri': {
        type: 'string',
        value: '/PATH',
        help: 'the path on the worker that processes the task',
      },
      'worker-port': { type: 'string', value: 'N', help: "the worker's port" },
    },
  },
  'tasks list': {
    synopsis: 'tasks list ENDPOINT [--status S]',
    summary: "an endpoint's tasks",
    flags: {
      status: {
        type: 'string',
        value: 'S',
        help: 'only tasks in this status: PROCESSING, DELIVERED, SUCCESS or FAILED',
      },
    },
  },
  'tasks get': {
    synopsis: 'tasks get ENDPOINT TASK | tasks get serverlesstask/NAME',
    summary: 'a task, with its whole input and output',
    flags: {},
  },
  'tasks count': {
    synopsis: 'tasks count ENDPOINT',
    summary: "an endpoint's tasks per status",
    flags: {},
  },
  'tasks watch': {
    synopsis: 'tasks watch ENDPOINT TASK | tasks watch serverlesstask/NAME',
    summary: 'wait for a task to end; exits 5 if it FAILED',
    flags: {},
  },
  ssh: {
    synopsis: 'ssh POD|VM [--exec [-- ssh arguments]]',
    summary: 'print the SSH command, or run it (no shell involved)',
    flags: {
      exec: { type: 'boolean', help: 'run ssh, with the arguments after --, instead of printing it' },
    },
  },
  cost: {
    synopsis: 'cost [-A]',
    summary: 'spend per hour and so far, per resource and namespace',
    flags: {},
  },
  resume: {
    synopsis: 'resume gpupod/NAME',
    summary: "lift the operator's pause (idle, deadline, budget)",
    flags: {},
    notes:
      'Sets annotation gpucloud.io/resume on the resource to the time now: a write to the resource with\n' +
      'your own RBAC (patch on gpupods), never a cloud call. The operator resumes the pod on its next\n' +
      'reconcile; kubectl annotate gpupod NAME gpucloud.io/resume=... --overwrite does the same.\n' +
      'A deadline that has passed pauses it again: raise spec.activeDeadlineSeconds instead.',
  },
  import: {
    synopsis:
      'import [--kind K]... [--name GLOB] [--region R]... [--status S]... [--dir DIR] [--provider-config PC] [--full-management]',
    summary: 'manifests for the cloud objects no resource holds, to adopt',
    flags: IMPORT_FLAGS,
    notes: IMPORT_NOTES,
  },
  plan: {
    synopsis: 'plan -f FILE|DIR|- [-f ...]',
    summary: 'price manifests before apply, with budgets; exits 6 if refused',
    flags: {
      file: {
        type: 'string',
        short: 'f',
        multiple: true,
        value: 'FILE',
        help:
          'manifests: a YAML or JSON file (several documents allowed), a directory of them,\n' +
          'or "-" for standard input, as kubectl apply -f; repeat for more',
      },
    },
    notes:
      "For each GpuPod, GpuVm and ServerlessEndpoint: its price per hour if created now (at today's GPU\n" +
      'offers and VM types: docs/spend.md says how exact each is), the total, and what the account it names\n' +
      '(spec.providerConfigRef, else default) would say: its namespaces, GPU types, GPUs per resource, live\n' +
      "GPUs, and budgets against the account's spend now. The account's ProviderConfig is read from the\n" +
      'cluster when there is one; with only an API key, guardrails and budgets are unknown and say so.\n' +
      'Exit 6 when a resource would not be created now (no offer matches, or a limit refuses it).',
  },
};

const TASK_ACTIONS = ['submit', 'list', 'get', 'count', 'watch'] as const;

const GLOBAL_FLAGS: Readonly<Record<string, Flag>> = {
  namespace: { type: 'string', short: 'n', value: 'NAMESPACE', help: 'the namespace of a named resource' },
  'all-namespaces': { type: 'boolean', short: 'A', help: 'every namespace (cost)' },
  kubeconfig: { type: 'string', value: 'FILE', help: 'the kubeconfig' },
  context: { type: 'string', value: 'NAME', help: 'the kubeconfig context' },
  output: { type: 'string', short: 'o', value: 'FORMAT', help: 'table, json or yaml' },
  id: { type: 'string', value: 'ID', help: 'a raw cloud id instead of a resource' },
  'api-key': { type: 'string', value: 'KEY', help: 'the API key (or GPUCLOUD_API_KEY)' },
  'api-url': { type: 'string', value: 'URL', help: 'the API URL (or GPUCLOUD_API_URL)' },
  verbose: {
    type: 'boolean',
    short: 'v',
    help: 'say which way a command went: the cloud API with a key, or the Kubernetes API (tenant API)',
  },
  help: { type: 'boolean', short: 'h', help: 'this help' },
  // How often logs -f and tasks watch read again; for tests, so left out of the help.
  'poll-ms': { type: 'string', value: 'MS', help: '' },
};

const GLOBAL_HELP = `Flags of every command: -n NAMESPACE  -A (all namespaces)  --kubeconfig FILE  --context NAME
       -o table|json|yaml  --id ID  --api-key KEY (or GPUCLOUD_API_KEY)  --api-url URL (or GPUCLOUD_API_URL)  -v
Without a key you may use (a tenant of a shared account), logs, metrics and tasks of a named resource go
through the Kubernetes API as your kubeconfig identity, to the operator's tenant API; -v says which.`;

const EXIT_HELP = `Exit codes: 0 ok, 1 the cloud failed or refused, 2 bad command line (plan: or a manifest that
admission would refuse), 3 not found (or no status.id or no metric samples yet), 4 no key or a refused key,
5 a watched task FAILED, 6 plan: a resource would be refused (no offer matches it, or a guardrail or budget
of its account).`;

function commandLine({ synopsis, summary }: Command): string {
  const column = 52;
  return synopsis.length + 2 < column - 1
    ? `  ${synopsis.padEnd(column - 2)}${summary}`
    : `  ${synopsis}\n${' '.repeat(column)}${summary}`;
}

const USAGE = `usage: gpucloud <command> [arguments] [flags]     (as a kubectl plugin: kubectl gpucloud ...)

Resources are named as kubectl names them (gpupod/NAME, gpuvm/NAME, sle/NAME) in the kubeconfig's
cluster, or by a raw cloud id with --id. gpucloud <command> --help lists a command's flags.

${Object.values(COMMANDS).map(commandLine).join('\n')}

${GLOBAL_HELP}

A resource's key is read from its ProviderConfig's Secret when your own RBAC lets you read it; else
--api-key or GPUCLOUD_API_KEY. Tenants of a shared account get no key from the cluster.
${EXIT_HELP}`;

function flagLines(flags: Readonly<Record<string, Flag>>): string {
  const heads = Object.entries(flags).map(([name, flag]) => {
    const short = flag.short ? `-${flag.short}, ` : '    ';
    return `  ${short}--${name}${flag.value ? ` ${flag.value}` : ''}`;
  });
  const width = Math.max(...heads.map((head) => head.length)) + 2;
  return Object.values(flags)
    .map((flag, index) => {
      const help = flag.help.replaceAll('\n', `\n${' '.repeat(width)}`);
      return `${(heads[index] ?? '').padEnd(width)}${help}`;
    })
    .join('\n');
}

/** The command `name` names, or a usage error that says which there are. */
function lookup(name: string): Command {
  const command = COMMANDS[name];
  if (command) return command;
  if (name === 'tasks' || name.startsWith('tasks ')) {
    throw usageError(
      `tasks takes ${TASK_ACTIONS.slice(0, -1).join(', ')} or ${TASK_ACTIONS.at(-1)}${name === 'tasks' ? '' : `, not "${name.slice(6)}"`}`,
    );
  }
  throw usageError(`unknown command "${name}"\n\n${USAGE}`);
}

/** `gpucloud <command> --help`: its synopsis, its own flags, then those of every command. */
function commandHelp(name: string): string {
  if (name === 'tasks') {
    const actions = TASK_ACTIONS.map((action) => lookup(`tasks ${action}`));
    return `usage:\n${actions.map(commandLine).join('\n')}\n\ngpucloud tasks <action> --help lists its flags.\n\n${GLOBAL_HELP}\n${EXIT_HELP}`;
  }
  const command = lookup(name);
  const own = Object.keys(command.flags).length ? `Flags:\n${flagLines(command.flags)}\n\n` : '';
  const notes = command.notes ? `${command.notes}\n\n` : '';
  const summary = `${command.summary.charAt(0).toUpperCase()}${command.summary.slice(1)}.`;
  return `usage: gpucloud ${command.synopsis}\n\n${summary}\n\n${own}${notes}${GLOBAL_HELP}\n${EXIT_HELP}`;
}

type Values = Readonly<Record<string, string | boolean | Array<string | boolean> | undefined>>;

const descriptors = (flags: Readonly<Record<string, Flag>>) =>
  Object.fromEntries(
    Object.entries(flags).map(([name, { type, short, multiple }]) => [
      name,
      { type, ...(short ? { short } : {}), ...(multiple ? { multiple } : {}) },
    ]),
  );

/** The commands that take each flag, by its long and its short name, and the flag's long name there. */
const COMMAND_FLAGS = new Map<string, Array<{ command: string; long: string }>>();
for (const [command, { flags }] of Object.entries(COMMANDS)) {
  for (const [name, { short }] of Object.entries(flags)) {
    for (const spelling of [`--${name}`, ...(short ? [`-${short}`] : [])]) {
      COMMAND_FLAGS.set(spelling, [...(COMMAND_FLAGS.get(spelling) ?? []), { command, long: `--${name}` }]);
    }
  }
}

/** What `flag` is to the commands that take it: `-f is --follow of "logs", --file of "tasks submit"`. */
function takenBy(flag: string): string | undefined {
  const uses = COMMAND_FLAGS.get(flag);
  if (!uses) return undefined;
  if (flag.startsWith('--'))
    return `${flag} is a flag of ${uses.map(({ command }) => `"${command}"`).join(', ')}`;
  return `${flag} is ${uses.map(({ command, long }) => `${long} of "${command}"`).join(', ')}`;
}

/**
 * The command (`logs`, `tasks submit`, ...) the words name, read with the flags of every command only: a
 * command's own flags mean what that command says (-f is a file to one and --follow to another), so they
 * come after it. `help COMMAND` is `COMMAND --help`.
 */
function commandOf(argv: string[]): { name: string | undefined; help: boolean } {
  const { tokens, values } = parseArgs({
    args: argv,
    options: descriptors(GLOBAL_FLAGS),
    allowPositionals: true,
    strict: false,
    tokens: true,
  });
  const words: string[] = [];
  const named = () => (words[0] === 'help' ? words.slice(1) : words);
  for (const token of tokens) {
    if (token.kind === 'positional') {
      words.push(token.value);
      const [first] = named();
      if (first !== undefined && named().length >= (first === 'tasks' ? 2 : 1)) break;
    } else if (token.kind === 'option' && !(token.name in GLOBAL_FLAGS)) {
      throw usageError(
        COMMAND_FLAGS.has(token.rawName)
          ? `${token.rawName} comes before the command: ${takenBy(token.rawName)}; put it after the command`
          : `unknown option "${token.rawName}"\n\n${USAGE}`,
      );
    }
  }
  return { name: named().join(' ') || undefined, help: values.help === true || words[0] === 'help' };
}

function parse(argv: string[], name: string, command: Command) {
  try {
    return parseArgs({
      args: argv,
      options: { ...descriptors(GLOBAL_FLAGS), ...descriptors(command.flags) },
      allowPositionals: true,
      strict: true,
    });
  } catch (error) {
    const unknown = /^Unknown option '([^']+)'/.exec((error as Error).message)?.[1];
    const message = unknown
      ? `${name} takes no ${unknown}: ${takenBy(unknown) ?? 'no command takes it'}`
      : (error as Error).message;
    throw usageError(`${message}\n\n${commandHelp(name)}`);
  }
}

const text = (values: Values, name: string) => {
  const value = values[name];
  return typeof value === 'string' ? value : undefined;
};
const flag = (values: Values, name: string) => values[name] === true;
const texts = (values: Values, name: string) => {
  const value = values[name];
  return Array.isArray(value) ? value.filter((each) => typeof each === 'string') : undefined;
};

async function main(argv: string[]): Promise<number> {
  const dash = argv.indexOf('--');
  const [ours, passed] = dash < 0 ? [argv, []] : [argv.slice(0, dash), argv.slice(dash + 1)];
  const { name, help } = commandOf(ours);
  if (name === undefined) {
    process.stdout.write(`${USAGE}\n`);
    return help ? EXIT.ok : EXIT.usage;
  }
  if (help) {
    process.stdout.write(`${commandHelp(name)}\n`);
    return EXIT.ok;
  }
  const command = lookup(name);
  const { values, positionals } = parse(ours, name, command);
  const rest = positionals.slice(name.split(' ').length);
  const format = outputFormat(text(values, 'output'));
  const connections: Connections = {
    kubeconfig: text(values, 'kubeconfig'),
    context: text(values, 'context'),
    namespace: text(values, 'namespace'),
    apiKey: text(values, 'api-key'),
    apiUrl: text(values, 'api-url'),
    env: process.env,
  };
  const print = (printable: Printable): void => {
    process.stdout.write(render(printable, format));
  };
  const abort = new AbortController();
  process.once('SIGINT', () => abort.abort());
  const target = (kinds: Parameters<typeof resolveTarget>[2], ref: string | undefined) =>
    resolveTarget(ref, text(values, 'id'), kinds, connections);
  const route = async (kinds: Parameters<typeof resolveTarget>[2], ref: string | undefined) => {
    const found = await resolveRoute(ref, text(values, 'id'), kinds, connections);
    if (flag(values, 'verbose')) process.stderr.write(`${describeRoute(name, found)}\n`);
    return found;
  };
  const pollMs = whole(text(values, 'poll-ms'), 'poll-ms') ?? 1000;
  switch (name) {
    case 'vm-types':
      return withClient(cloud(connections), async (client) => print(await vmTypes(client)));
    case 'offers': {
      const files = texts(values, 'file');
      return withClient(cloud(connections), async (client) =>
        print(
          files
            ? await placementOffers(client, await readManifests(files, readStdin))
            : await offers(client, offerFilters(values)),
        ),
      );
    }
    case 'logs': {
      const options = {
        follow: flag(values, 'follow'),
        sinceMs: duration(text(values, 'since'), 'since'),
        limit: whole(text(values, 'limit'), 'limit'),
        keyword: text(values, 'keyword'),
        signal: abort.signal,
      };
      const write = (line: string) => process.stdout.write(`${line}\n`);
      const way = await route(['GpuPod'], rest[0]);
      if (way.via === 'apiserver') {
        await tenantLogs(way.tenant, options, write);
        return EXIT.ok;
      }
      return withTarget(way.target, (t) => logs(t, { ...options, pollMs }, write));
    }
    case 'metrics': {
      const windowMs = duration(text(values, 'window'), 'window') ?? 3_600_000;
      const step = stepOf(text(values, 'step') ?? (windowMs <= 3_600_000 ? '30s' : '5m'));
      const end = Date.now();
      const window = { start: end - windowMs, end, step };
      const way = await route(['GpuPod'], rest[0]);
      if (way.via === 'apiserver') {
        const { namespace, name: pod } = way.tenant;
        print(
          metricsTable(
            await tenantMetrics(way.tenant, { windowMs, step }),
            window,
            `GpuPod ${namespace}/${pod}`,
          ),
        );
        return EXIT.ok;
      }
      return withTarget(way.target, async (t) => print(await metrics(t, window)));
    }
    case 'ssh':
      return withTarget(await target(['GpuPod', 'GpuVm'], rest[0]), async (t) => {
        const args = sshArguments(t);
        process.stdout.write(flag(values, 'exec') ? await execSsh(args, passed) : `${args.join(' ')}\n`);
      });
    case 'cost':
      print(await cost(connections, flag(values, 'all-namespaces')));
      return EXIT.ok;
    case 'resume': {
      const [reference] = rest;
      if (reference === undefined || rest.length > 1)
        throw usageError('resume takes one resource: gpupod/NAME');
      print(await resume(reference, connections, new Date()));
      return EXIT.ok;
    }
    case 'import':
      return runImport(values, connections, text(values, 'output') === undefined ? 'yaml' : format);
    case 'plan': {
      const files = texts(values, 'file') ?? [];
      if (files.length === 0) throw usageError('plan takes the manifests with -f FILE, -f DIRECTORY or -f -');
      const { result, printable, refused } = await plan(await readManifests(files, readStdin), connections);
      print(printable);
      if (refused === 0) return EXIT.ok;
      process.stderr.write(
        `plan: ${refused} of ${result.resources.length} resources would not be created now: their verdicts say why\n`,
      );
      return EXIT.refused;
    }
    default:
      return tasks(name.slice('tasks '.length), rest, values, route, print, pollMs, abort.signal);
  }
}

async function tasks(
  action: string,
  [endpoint, taskId]: string[],
  values: Values,
  route: (kinds: Parameters<typeof resolveTarget>[2], ref: string | undefined) => Promise<Route>,
  print: (printable: Printable) => void,
  pollMs: number,
  signal: AbortSignal,
): Promise<number> {
  const needTask = () => {
    if (!taskId) throw usageError(`tasks ${action} takes ENDPOINT TASK_ID`);
    return taskId;
  };
  const resolved = () => route(['ServerlessEndpoint'], endpoint);
  // A ServerlessTask's status id names its endpoint and its task.
  const taskRoute = async (): Promise<[Route, string]> => {
    const way = await route(['ServerlessEndpoint', 'ServerlessTask'], endpoint);
    if (way.via === 'apiserver') {
      if (way.kind !== 'ServerlessTask') return [way, needTask()];
      const { endpoint: tenant, taskId: id } = await tenantTaskOf(way.tenant);
      return [{ ...way, tenant }, id];
    }
    const t = way.target;
    if (t.kind !== 'ServerlessTask') return [way, needTask()];
    const { endpointId, taskId: id } = splitId(t.id);
    return [{ via: 'cloud', target: { ...t, id: endpointId } }, id];
  };
  /** Runs `cloud` with the target's client, or `tenant` through the Kubernetes API. */
  const either = async (
    way: Route,
    cloud: (t: Target) => Promise<Printable>,
    tenant: (t: TenantTarget) => Promise<Printable>,
  ): Promise<number> => {
    if (way.via === 'cloud') return withTarget(way.target, async (t) => print(await cloud(t)));
    print(await tenant(way.tenant));
    return EXIT.ok;
  };
  switch (action) {
    case 'submit': {
      const input = await readInput(text(values, 'file'));
      const id = text(values, 'task-id');
      const webhook = text(values, 'webhook');
      const processUri = text(values, 'process-uri');
      const workerPort = whole(text(values, 'worker-port'), 'worker-port');
      const request = {
        input,
        ...(id ? { taskId: id } : {}),
        ...(webhook ? { webhook } : {}),
        ...(processUri ? { processUri } : {}),
        ...(workerPort === undefined ? {} : { workerPort }),
      };
      return either(
        await resolved(),
        (t) => submitTask(t, request),
        async (t) => submittedTable(await tenantSubmitTask(t, request)),
      );
    }
    case 'list': {
      const status = text(values, 'status');
      return either(
        await resolved(),
        (t) => listTasks(t, status),
        async (t) => taskListTable(await tenantListTasks(t, status)),
      );
    }
    case 'get': {
      const [way, id] = await taskRoute();
      return either(
        way,
        (t) => getTask(t, id),
        async (t) => taskTable(await tenantGetTask(t, id)),
      );
    }
    case 'count':
      return either(
        await resolved(),
        (t) => countTasks(t),
        async (t) => countsTable(await tenantCountTasks(t)),
      );
    case 'watch': {
      const [way, id] = await taskRoute();
      const watch = (read: (taskId: string) => Promise<TaskRow>) =>
        watchTask(read, id, pollMs, progressOn(process.stderr), signal);
      return either(
        way,
        (t) => watch((taskId) => t.client.serverless.tasks.get(t.id, taskId)),
        (t) => watch((taskId) => tenantGetTask(t, taskId)),
      );
    }
    default:
      throw usageError('tasks takes submit, list, get, count or watch');
  }
}

/** What `-v` prints: which way the command went, and as whom. */
function describeRoute(command: string, way: Route): string {
  if (way.via === 'cloud') {
    return `gpucloud ${command}: straight to the GPU cloud API, with a key you hold (--api-key, GPUCLOUD_API_KEY, or the account's Secret your RBAC lets you read)`;
  }
  const { namespace, plural, name } = way.tenant;
  return `gpucloud ${command}: through the Kubernetes API as your kubeconfig identity, to the operator's tenant API (/apis/tenant.gpucloud.io/v1alpha1/namespaces/${namespace}/${plural}/${name}/...): you hold no key of the account`;
}

/** The task input: JSON from the file of -f (--file), or from standard input with `-f -` (or no -f and a pipe). */
async function readInput(file: string | undefined): Promise<unknown> {
  let text: string;
  if (file === undefined || file === '-') {
    if (file === undefined && process.stdin.isTTY)
      throw usageError('give the task input with -f FILE or -f -');
    text = await readStdin();
  } else {
    text = await readFile(file, 'utf8').catch((error: NodeJS.ErrnoException) => {
      throw usageError(
        `cannot read the task input ${file} (${error.code ?? error.message}): give -f FILE or -f -`,
      );
    });
  }
  try {
    return JSON.parse(text);
  } catch {
    throw usageError(`the task input is not JSON${file && file !== '-' ? ` (${file})` : ''}`);
  }
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
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
  const gpus = texts(values, 'gpu');
  const regions = texts(values, 'region');
  const counts = texts(values, 'count');
  const minVram = text(values, 'min-vram');
  if (flag(values, 'spot') && flag(values, 'on-demand')) {
    throw usageError('--spot and --on-demand exclude each other');
  }
  return {
    ...(gpus ? { gpuTypes: gpus } : {}),
    ...(regions ? { regions } : {}),
    ...(counts ? { gpuCounts: counts.map((count) => whole(count, 'count') ?? 1) } : {}),
    ...(flag(values, 'spot') ? { isSpot: true } : flag(values, 'on-demand') ? { isSpot: false } : {}),
    ...(minVram ? { minGpuMemoryInGb: whole(minVram, 'min-vram') } : {}),
    ...(flag(values, 'all') ? { includeUnavailable: true } : {}),
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

/** Runs one command line of the gpucloud CLI; answers its exit code, an error's written to stderr. */
export async function runCli(argv: string[]): Promise<number> {
  try {
    return await main(argv);
  } catch (error) {
    const { message, exitCode } = explain(error);
    process.stderr.write(`error: ${message}\n`);
    return exitCode;
  }
}
