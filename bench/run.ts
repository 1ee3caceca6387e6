// `npm run bench`: the operator against the limits of this machine. See docs/performance.md.
import { mkdir, writeFile } from 'node:fs/promises';
import { cpus, loadavg, release, totalmem } from 'node:os';
import { dirname } from 'node:path';
import { createLogger } from '../src/lib/logger.ts';
import { buildOperator, SOURCE_ENTRY } from './build.ts';
import { runChurn } from './churn-run.ts';
import { applyCpuSplit, planCpuSplit } from './cpu-split.ts';
import { measureIdleInProcess } from './idle-in-process.ts';
import { runIdle } from './idle-run.ts';
import { measureImage } from './image.ts';
import { runMixed } from './mixed-run.ts';
import { operatorFlags, stopAllOperators } from './operator.ts';
import { type BenchOptions, parseOptions, USAGE } from './options.ts';
import { childPids } from './process-stats.ts';
import { render } from './report.ts';
import { attempt, type BenchResults } from './results.ts';
import type { Session } from './session.ts';
import { runSize } from './size-run.ts';
import { APISERVER_ENV, SIM_SETTINGS, type Stack, startStack } from './stack.ts';
import { checkTargets } from './targets.ts';

function options(): BenchOptions {
  try {
    return parseOptions(process.argv.slice(2));
  } catch (error) {
    console.error(`bench: ${error instanceof Error ? error.message : error}\n${USAGE}`);
    process.exit(2);
  }
}

/** An argument as a shell would need it to get it back. */
function quoted(arg: string): string {
  return /^[\w.,=:/-]+$/.test(arg) ? arg : `'${arg.replaceAll("'", "'\\''")}'`;
}

function machine() {
  const [cpu] = cpus();
  return {
    cpus: cpus().length,
    cpuModel: cpu?.model ?? 'unknown',
    memoryGb: Math.round(totalmem() / 2 ** 30),
    kernel: release(),
    node: process.version,
    loadavgAtStart: loadavg().map((value) => Math.round(value * 100) / 100),
  };
}

async function main(): Promise<number> {
  const opts = options();
  const log = createLogger({ level: 'info', name: 'bench', destination: process.stderr });
  const began = Date.now();
  const cpuSplit = opts.sharedCpus ? undefined : planCpuSplit();
  const results: BenchResults = {
    startedAt: new Date(began).toISOString(),
    durationSeconds: 0,
    command: `npm run bench -- ${process.argv.slice(2).map(quoted).join(' ')}`.trim(),
    machine: machine(),
    settings: {
      operatorFlags: operatorFlags(opts, '<per run>'),
      simulator: { ...SIM_SETTINGS },
      apiserver: `src/local/controlplane.ts defaults (etcd without fsync), environment ${JSON.stringify(APISERVER_ENV)}; bench and operator use the admin identity`,
      benchConcurrency: opts.concurrency,
      cpus: cpuSplit ?? 'shared',
      operatorNodeOptions: opts.nodeOptions,
      operatorEnv: opts.operatorEnv,
      operatorBuild: opts.fromSource
        ? 'TypeScript sources (node type stripping)'
        : 'compiled (tsconfig.build.json)',
    },
    sizes: [],
    mixed: undefined,
  };
  let stack: Stack | undefined;
  const interrupted = async () => {
    log.warn('interrupted: stopping the operator, the simulator and the control plane');
    await stopAllOperators();
    await stack?.stop();
    process.exit(130);
  };
  process.once('SIGINT', interrupted);
  process.once('SIGTERM', interrupted);
  if (opts.image) {
    // First, on a machine nothing of the benchmark loads yet.
    log.info('image: size and start-up');
    results.image = await attempt(() => measureImage(log));
  }
  try {
    // --image with --sizes none --mixed 0 measures the image alone: no operator, no control plane.
    if (opts.sizes.length > 0 || opts.mixed > 0 || opts.churn > 0) {
      const operatorEntry = opts.fromSource ? SOURCE_ENTRY : await buildOperator(log);
      stack = await startStack();
      const controlPlanePids = childPids([]);
      if (cpuSplit) applyCpuSplit(cpuSplit, controlPlanePids);
      const session: Session = { stack, options: opts, log, controlPlanePids, operatorEntry };
      for (const size of opts.sizes) {
        if (opts.idleCheckWindow > 0) {
          log.info({ size }, 'idle-check run starting');
          results.idleRuns ??= [];
          results.idleRuns.push({ size, ...(await attempt(() => runIdle(session, size))) });
          continue;
        }
        log.info({ size }, 'size run starting');
        results.sizes.push({ size, ...(await attempt(() => runSize(session, size))) });
      }
      if (opts.mixed > 0) results.mixed = await attempt(() => runMixed(session, opts.mixed));
      if (opts.churn > 0) {
        log.info({ cycles: opts.churn }, 'churn run starting');
        results.churn = await attempt(() => runChurn(session, opts.churn));
      }
    }
  } finally {
    await stopAllOperators();
    await stack?.stop();
  }
  if (opts.idleCheckInProcess) {
    // After the stack is down: nothing else runs. Each count has its own fake cloud, account and schedule,
    // so they run side by side (one idle check per second each is no load).
    log.info({ keys: opts.idleCheckInProcess }, 'idle schedule in-process');
    const counts = opts.idleCheckInProcess;
    const outcomes = await Promise.all(
      counts.map((keys) => attempt(() => measureIdleInProcess(opts, keys, log))),
    );
    results.idleInProcess = outcomes.map((outcome, i) => ({ keys: counts[i] ?? 0, ...outcome }));
  }
  results.durationSeconds = Math.round((Date.now() - began) / 1000);
  const checks = checkTargets(results);
  await mkdir(dirname(opts.out), { recursive: true });
  await writeFile(opts.out, `${JSON.stringify({ ...results, targets: checks }, null, 2)}\n`);
  console.log(render(results, checks));
  console.log(`\nresults: ${opts.out}`);
  const failed = results.mixed?.ok === false || results.image?.ok === false;
  return checks.every((check) => check.met) && !failed ? 0 : 1;
}

process.exitCode = await main();
