// The operator under test: a child process started as `npm start` would, with the benchmark's flags,
// so its memory and CPU are its own.
import { freeLoopbackPorts } from '../src/local/controlplane/ports.ts';
import { type Exit, type OperatorProcess, spawnOperator } from '../test/support/operator-process.ts';
import type { BenchOptions } from './options.ts';
import { operatorMetrics, type Sample, sumBy } from './prometheus.ts';
import type { Session } from './session.ts';
import { API_KEY } from './stack.ts';

export interface OperatorRun {
  readonly pid: number;
  /** When the process was spawned (epoch ms). */
  readonly startedAt: number;
  readonly flags: readonly string[];
  metrics(): Promise<OperatorCounters>;
  /** SIGTERM, and the time the graceful shutdown took. */
  stop(): Promise<{ exit: Exit; shutdownMs: number }>;
  /** Log lines at warn level or above (the operator runs with --log-level warn). */
  warnings(): string[];
}

export interface OperatorCounters {
  reconciles: Record<string, number>;
  reconcileErrors: number;
  cloudRequests: number;
  /** Seconds requests spent waiting for the client-side rate limiter, all together. */
  rateLimitedSeconds: number;
  /** Per memory of the reconcilers (summed over kinds), the resources it holds something for. */
  remembered: Record<string, number>;
}

export interface OperatorSettings {
  namespace: string;
  callbacks: boolean;
  /** Flags beyond the benchmark's own (`--virtual-nodes true`). */
  extraFlags?: readonly string[];
}

/** The flags every benchmarked operator runs with (also recorded in the results). */
export function operatorFlags(options: BenchOptions, namespace: string): string[] {
  return [
    '--namespace',
    namespace,
    '--concurrency',
    String(options.concurrency),
    '--poll-interval',
    String(options.pollInterval),
    '--api-rps',
    String(options.apiRps),
    '--details-rps',
    String(options.detailsRps),
    '--details-interval',
    String(options.detailsInterval),
    '--log-level',
    'warn',
    // Idle-check runs name the budget they are judged against, whatever the operator's defaults.
    ...(options.idleCheckWindow > 0
      ? [
          '--idle-check-rps',
          String(options.idleCheckRps),
          '--idle-check-interval',
          String(options.idleCheckInterval),
        ]
      : []),
  ];
}

const CALLBACK_TOKEN = 'bench-callback-token-51f0c2-5b1e7d9a0c3f';

/** Every operator process still running, so an interrupted benchmark leaves none behind. */
const running = new Set<OperatorProcess>();

export async function stopAllOperators(): Promise<void> {
  await Promise.all([...running].map((child) => child.kill('SIGTERM')));
}

export async function startOperator(session: Session, settings: OperatorSettings): Promise<OperatorRun> {
  const { stack, options } = session;
  const [healthPort, callbackPort] = await freeLoopbackPorts(2);
  const flags = [
    ...operatorFlags(options, settings.namespace),
    ...(settings.extraFlags ?? []),
    '--health-port',
    String(healthPort),
  ];
  if (settings.callbacks) {
    flags.push(
      '--callback-port',
      String(callbackPort),
      '--callback-base-url',
      `http://127.0.0.1:${callbackPort}`,
    );
  }
  const env: Record<string, string> = {
    ...Object.fromEntries(options.operatorEnv.map((pair) => pair.split(/=(.*)/s).slice(0, 2))),
    ...stack.inClusterEnv,
    GPUCLOUD_CALLBACK_TOKEN: CALLBACK_TOKEN,
  };
  const nodeOptions = [
    options.nodeOptions,
    options.cpuProf ? `--cpu-prof --cpu-prof-dir=${options.cpuProf}` : '',
  ];
  env.NODE_OPTIONS = nodeOptions.filter(Boolean).join(' ');
  const startedAt = Date.now();
  // On the in-cluster path, as in a pod: no kubeconfig, so client-node is never loaded.
  const child: OperatorProcess = spawnOperator({
    apiUrl: stack.sim.url,
    apiKey: API_KEY,
    flags,
    env,
    entry: session.operatorEntry,
  });
  running.add(child);
  void child.exited.then(() => running.delete(child));
  return {
    pid: child.pid,
    startedAt,
    flags,
    metrics: async () => countersFrom(await operatorMetrics(healthPort as number)),
    async stop() {
      const asked = Date.now();
      const exit = await child.kill('SIGTERM');
      return { exit, shutdownMs: Date.now() - asked };
    },
    warnings: () =>
      child
        .output()
        .split('\n')
        .filter((line) => /"level":"(warn|error|fatal)"/.test(line)),
  };
}

function countersFrom(samples: readonly Sample[]): OperatorCounters {
  const total = (name: string) => Object.values(sumBy(samples, name, () => 'all')).reduce((a, b) => a + b, 0);
  return {
    reconciles: sumBy(samples, 'controller_runtime_reconcile_total', (labels) => labels.result),
    reconcileErrors: total('controller_runtime_reconcile_errors_total'),
    cloudRequests: total('gpucloud_api_requests_total'),
    rateLimitedSeconds: Math.round(total('gpucloud_api_rate_limiter_wait_seconds_sum') * 100) / 100,
    remembered: sumBy(samples, 'gpucloud_remembered_resources', (labels) => labels.memory),
  };
}
