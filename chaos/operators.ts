import { readFile } from 'node:fs/promises';
import { freeLoopbackPorts } from '../src/local/controlplane/ports.ts';
import { settlesWithin, sleep } from '../src/lib/delay.ts';
import { type Exit, type OperatorProcess, spawnOperator } from '../test/support/operator-process.ts';
import type { Transcripts } from './transcripts.ts';

export interface ReplicaOptions {
  /** Names the replica in transcripts and reports, e.g. `crashes-a`. */
  readonly name: string;
  readonly kubeconfigPath: string;
  readonly apiUrl: string;
  readonly apiKey: string;
  readonly flags: readonly string[];
  readonly transcripts: Transcripts;
}

/** Why a process ended: the suite killed it, it gave up a lost lease (by design), or it failed. */
export type ExitCause = 'killed' | 'lost-leadership' | 'crashed';

export interface EndedProcess {
  readonly pid: number;
  readonly cause: ExitCause;
  readonly exit: Exit;
  readonly at: number;
}

/** Restarts after a crash wait this long, so that a process failing at startup is not respawned in a loop. */
const RESTART_DELAY_MS = 500;
const GRACEFUL_STOP_MS = 10_000;
/** The machine may be busy: node, the TypeScript loader and the operator's imports take a while. */
const STARTUP_TIMEOUT_MS = 60_000;
/** USER_HZ of /proc/<pid>/stat: 100 on every Linux the suite runs on. */
const CLOCK_TICKS_PER_SECOND = 100;

/**
 * One operator replica as a Deployment runs it: a child process (`node src/cli/operator.ts`) that is
 * started again whenever it ends on its own. The suite may SIGKILL it at any instant; every process's
 * output is kept in the run's transcripts.
 */
export class Replica {
  readonly name: string;
  readonly #options: ReplicaOptions;
  readonly ended: EndedProcess[] = [];
  readonly #outputs: Array<() => string> = [];
  #process: OperatorProcess | undefined;
  #healthPort = 0;
  #generation = 0;
  #stopped = false;
  #expectingExit = false;

  constructor(options: ReplicaOptions) {
    this.name = options.name;
    this.#options = options;
  }

  /** Processes that ended without being killed by the suite or losing the lease. */
  get crashes(): number {
    return this.ended.filter((ended) => ended.cause === 'crashed').length;
  }

  /** The output of the running process (empty when none runs). */
  output(): string {
    return this.#process?.output() ?? '';
  }

  /** The output of every process this replica ran, oldest first. */
  history(): string[] {
    return this.#outputs.map((read) => read());
  }

  /** Starts a process and resolves once its health server answers (or it has ended). */
  async start(): Promise<void> {
    const [port] = await freeLoopbackPorts(1);
    if (port === undefined) throw new Error('no free loopback port for the health server');
    this.#healthPort = port;
    this.#generation += 1;
    const child = spawnOperator({
      kubeconfigPath: this.#options.kubeconfigPath,
      apiUrl: this.#options.apiUrl,
      apiKey: this.#options.apiKey,
      flags: [...this.#options.flags, '--health-port', String(port)],
    });
    this.#process = child;
    this.#expectingExit = false;
    this.#outputs.push(child.output);
    this.#options.transcripts.add(`${this.name}#${this.#generation} (pid ${child.pid})`, child.output);
    void child.exited.then((exit) => this.#onExit(child, exit));
    await this.#serving(child, port);
  }

  /** SIGKILL now, at whatever the process is doing; resolves once it is gone. Not restarted. */
  async kill(): Promise<void> {
    const child = this.#process;
    if (!child) return;
    this.#expectingExit = true;
    await child.kill('SIGKILL');
  }

  /**
   * SIGSTOP for `ms`, then SIGCONT: a process paused as by a stopped VM or a long stall, which resumes
   * with its work in flight and its sockets full of answers. Not restarted: it carries on, or exits.
   */
  async freeze(ms: number): Promise<void> {
    const pid = this.#process?.pid;
    if (pid === undefined) return;
    process.kill(pid, 'SIGSTOP');
    await sleep(ms);
    process.kill(pid, 'SIGCONT');
  }

  /** Stops for good: SIGTERM (a graceful shutdown), SIGKILL if that takes too long. */
  async stop(): Promise<void> {
    this.#stopped = true;
    const child = this.#process;
    if (!child) return;
    this.#expectingExit = true;
    if (!(await settlesWithin(child.kill('SIGTERM'), GRACEFUL_STOP_MS))) await child.kill('SIGKILL');
  }

  /** The Prometheus text of the running process's `/metrics`. */
  async metrics(): Promise<string> {
    const response = await fetch(`http://127.0.0.1:${this.#healthPort}/metrics`);
    if (!response.ok) throw new Error(`${this.name}: /metrics answered HTTP ${response.status}`);
    return response.text();
  }

  /** Whether the running process answers its liveness probe. */
  async healthy(): Promise<boolean> {
    try {
      return (await fetch(`http://127.0.0.1:${this.#healthPort}/healthz`)).ok;
    } catch {
      return false;
    }
  }

  /** CPU time the running process has used so far, in seconds (Linux: /proc). */
  async cpuSeconds(): Promise<number> {
    const pid = this.#process?.pid;
    if (pid === undefined) throw new Error(`${this.name} runs no process`);
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    // Fields after the parenthesised command name; utime and stime are the 14th and 15th fields.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND;
  }

  async #serving(child: OperatorProcess, port: number): Promise<void> {
    let ended = false;
    void child.exited.then(() => (ended = true));
    const deadline = Date.now() + STARTUP_TIMEOUT_MS;
    while (!ended) {
      try {
        if ((await fetch(`http://127.0.0.1:${port}/healthz`)).ok) return;
      } catch {
        // Not listening yet.
      }
      if (Date.now() > deadline)
        throw new Error(`${this.name}: no answer on /healthz after ${STARTUP_TIMEOUT_MS} ms`);
      await sleep(100);
    }
  }

  async #onExit(child: OperatorProcess, exit: Exit): Promise<void> {
    const cause: ExitCause = this.#expectingExit
      ? 'killed'
      : child.output().includes('leadership lost; exiting')
        ? 'lost-leadership'
        : 'crashed';
    this.ended.push({ pid: child.pid, cause, exit, at: Date.now() });
    if (this.#process === child) this.#process = undefined;
    if (cause === 'killed' || this.#stopped) return;
    await sleep(RESTART_DELAY_MS);
    if (!this.#stopped && this.#process === undefined) await this.start();
  }
}
