// The operator as a real child process (`node src/cli/operator.ts`), for what an in-process run cannot
// show: SIGKILL at any instant, SIGTERM handling, memory and CPU of the process alone.
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const ENTRY = fileURLToPath(new URL('../../src/cli/operator.ts', import.meta.url));

export interface OperatorProcessOptions {
  /** Omitted: the operator takes the in-cluster path (the service-account variables go in `env`). */
  kubeconfigPath?: string | undefined;
  apiUrl: string;
  apiKey: string;
  /** More flags, e.g. `['--leader-elect', 'true']`. */
  flags?: readonly string[];
  env?: Readonly<Record<string, string>>;
  /** The script to run; the TypeScript entry point by default (the benchmark runs the compiled one). */
  entry?: string;
}

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface OperatorProcess {
  readonly pid: number;
  /** Everything the process wrote to stdout and stderr so far. */
  output(): string;
  readonly exited: Promise<Exit>;
  /** Sends `signal` and waits for the exit. */
  kill(signal?: NodeJS.Signals): Promise<Exit>;
}

export function spawnOperator(options: OperatorProcessOptions): OperatorProcess {
  const child: ChildProcess = spawn(
    process.execPath,
    [
      options.entry ?? ENTRY,
      ...(options.kubeconfigPath === undefined ? [] : ['--kubeconfig', options.kubeconfigPath]),
      '--api-url',
      options.apiUrl,
      '--health-port',
      '0',
      ...(options.flags ?? []),
    ],
    {
      env: {
        PATH: process.env.PATH ?? '',
        GPUCLOUD_API_KEY: options.apiKey,
        // The test run's compile cache (tools/run-tests.ts): an operator process starts compiled, as a test does.
        ...(process.env.NODE_COMPILE_CACHE === undefined
          ? {}
          : { NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE }),
        ...options.env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const chunks: string[] = [];
  child.stdout?.on('data', (chunk: Buffer) => chunks.push(chunk.toString('utf8')));
  child.stderr?.on('data', (chunk: Buffer) => chunks.push(chunk.toString('utf8')));
  const exited = new Promise<Exit>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  if (child.pid === undefined) throw new Error(`could not start ${options.entry ?? ENTRY}`);
  return {
    pid: child.pid,
    output: () => chunks.join(''),
    exited,
    kill: async (signal = 'SIGTERM') => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}
