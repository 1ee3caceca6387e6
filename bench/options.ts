import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { z } from 'zod';

const sizeList = z
  .string()
  .transform((text) => text.split(',').map((part) => Number(part.trim())))
  .pipe(z.array(z.number().int().positive()).min(1));

/** What the operator's image runs with: the benchmark measures the operator as it ships. */
const DOCKERFILE = readFileSync(new URL('../Dockerfile', import.meta.url), 'utf8');

/** `pattern`'s first group in the Dockerfile; `what` names it when the Dockerfile sets none. */
function imageSetting(pattern: RegExp, what: string): string {
  const match = pattern.exec(DOCKERFILE);
  if (!match?.[1]) throw new Error(`the Dockerfile sets no ${what}`);
  return match[1];
}

/** The V8 settings (`ENV NODE_OPTIONS`): not the heap V8 would size from this host's memory. */
const imageNodeOptions = () => imageSetting(/NODE_OPTIONS="([^"]*)"/, 'NODE_OPTIONS="..."');

/** The allocator setting (`MALLOC_ARENA_MAX`), for the same reason. */
const imageEnvironment = () => imageSetting(/^\s*(MALLOC_ARENA_MAX=\d+)\s*$/m, 'MALLOC_ARENA_MAX=...');

const optionsSchema = z.object({
  /** GpuPod counts, each measured end to end with a fresh operator process; `none` for none. */
  sizes: z
    .union([z.literal('none').transform((): number[] => []), sizeList])
    .default([100, 1000, 5000, 10000]),
  /** Resources of the mixed run (GpuPods, GpuVms, ServerlessEndpoints and ServerlessTasks); 0 skips it. */
  mixed: z.coerce.number().int().min(0).default(900),
  /** Client concurrency of the benchmark's writers and of the raw apiserver loop; also the operator's workers. */
  concurrency: z.coerce.number().int().positive().default(16),
  pollInterval: z.coerce.number().positive().default(10),
  apiRps: z.coerce.number().positive().default(2000),
  detailsRps: z.coerce.number().positive().default(2),
  detailsInterval: z.coerce.number().positive().default(300),
  /** Length of the steady-state measurement window, seconds. */
  steadySeconds: z.coerce.number().positive().default(60),
  /** Resources created one at a time (paced) to measure creation latency without queueing. */
  pacedCount: z.coerce.number().int().min(0).default(100),
  pacedRate: z.coerce.number().positive().default(10),
  /** Cloud-side failures injected to measure how fast the status shows them. */
  reactionCount: z.coerce.number().int().min(0).default(20),
  /** Where the JSON results go. */
  out: z.string().default('.cache/bench/results.json'),
  /** Writes a V8 CPU profile of each operator process into this directory. */
  cpuProf: z.string().optional(),
  /** NODE_OPTIONS for the operator process (recorded in the results); the image's by default. */
  nodeOptions: z.string().default(imageNodeOptions()),
  /**
   * The operator process's environment beyond the in-cluster one, `NAME=value,NAME=value`: the image's
   * `MALLOC_ARENA_MAX` by default; `--operator-env ''` for none. Recorded in the results.
   */
  operatorEnv: z
    .string()
    .default(imageEnvironment())
    .transform((text) => text.split(',').filter(Boolean))
    .pipe(z.array(z.string().regex(/^[A-Z_][A-Z0-9_]*=[^,]*$/, 'must be NAME=value'))),
  /** Runs the TypeScript sources instead of the compiled build that ships. */
  fromSource: z.boolean().default(false),
  /** Runs the control plane on every CPU with the operator, instead of on CPUs of its own (cpu-split.ts). */
  sharedCpus: z.boolean().default(false),
  /**
   * Seconds of the idle-check window; 0 (the default) leaves the benchmark as it is. Above 0 every size
   * run becomes an idle-check run (bench/idle-run.ts): N GpuPods with `spec.idleStop`, kept busy, to
   * Ready, then the GPU-metrics calls idle checks make over this window, instead of the standard phases.
   */
  idleCheckWindow: z.coerce.number().min(0).default(0),
  /** The operator's `--idle-check-rps` in idle-check runs (and in-process), the budget judged against. */
  idleCheckRps: z.coerce.number().positive().default(1),
  /** The operator's `--idle-check-interval` in idle-check runs (and in-process), seconds. */
  idleCheckInterval: z.coerce.number().positive().default(300),
  /**
   * Key counts for the in-process measurement of the idle schedule (bench/idle-in-process.ts): the real
   * idle schedule, operator pause and GpuPod adapter against a fake cloud, no apiserver, no operator
   * process. Needs --idle-check-window.
   */
  idleCheckInProcess: sizeList.optional(),
  /** Measures the image (`npm run image`, bench/image.ts): its size and its start-up under runc. */
  image: z.boolean().default(false),
  /** Create/delete cycles of the churn run (bench/churn-run.ts): memory given back after; 0 skips it. */
  churn: z.coerce.number().int().min(0).default(0),
});

export type BenchOptions = z.output<typeof optionsSchema>;

const FLAGS: Record<keyof BenchOptions, string> = {
  sizes: 'sizes',
  mixed: 'mixed',
  concurrency: 'concurrency',
  pollInterval: 'poll-interval',
  apiRps: 'api-rps',
  detailsRps: 'details-rps',
  detailsInterval: 'details-interval',
  steadySeconds: 'steady-seconds',
  pacedCount: 'paced-count',
  pacedRate: 'paced-rate',
  reactionCount: 'reaction-count',
  out: 'out',
  cpuProf: 'cpu-prof',
  nodeOptions: 'node-options',
  operatorEnv: 'operator-env',
  fromSource: 'from-source',
  sharedCpus: 'shared-cpus',
  idleCheckWindow: 'idle-check-window',
  idleCheckRps: 'idle-check-rps',
  idleCheckInterval: 'idle-check-interval',
  idleCheckInProcess: 'idle-check-in-process',
  image: 'image',
  churn: 'churn',
};

const BOOLEAN_FLAGS = new Set(['from-source', 'shared-cpus', 'image']);

export const USAGE = `usage: npm run bench -- [flags]\n${Object.values(FLAGS)
  .map((flag) => `  --${flag}`)
  .join('\n')}`;

/** Parses the command line; throws an Error whose message names the bad flag. */
export function parseOptions(argv: readonly string[]): BenchOptions {
  const { values } = parseArgs({
    args: [...argv],
    options: Object.fromEntries(
      Object.values(FLAGS).map(
        (flag) => [flag, { type: BOOLEAN_FLAGS.has(flag) ? 'boolean' : 'string' }] as const,
      ),
    ),
    strict: true,
  });
  const input = Object.fromEntries(Object.entries(FLAGS).map(([name, flag]) => [name, values[flag]]));
  const parsed = optionsSchema.safeParse(input);
  if (parsed.success) {
    if (parsed.data.idleCheckInProcess && parsed.data.idleCheckWindow === 0)
      throw new Error('--idle-check-in-process: needs --idle-check-window (seconds) above 0');
    return parsed.data;
  }
  const problems = parsed.error.issues.map(
    (issue) => `--${FLAGS[issue.path[0] as keyof BenchOptions]}: ${issue.message}`,
  );
  throw new Error(problems.join('; '));
}
