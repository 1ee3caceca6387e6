// One server of the control plane or the node (etcd, kube-apiserver, the kubelet, ...) as a child process
// that cannot outlive us.
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { Socket } from 'node:net';
import { type ControlPlaneComponent, ControlPlaneError } from './errors.ts';

const STOP_GRACE_MS = 10_000;
const LOG_TAIL_BYTES = 8192;

export interface ServerSpec {
  binary: string;
  component: ControlPlaneComponent;
  /** The binary's first argument; default: the component. */
  mode?: string;
  args: string[];
  logPath: string;
  /** A command that runs the binary in namespaces of its own (`nsenter ...`, `unshare ...`); it must exec it. */
  wrapper?: readonly string[];
  /** How long SIGTERM may take before SIGKILL; default 10 s. */
  stopGraceMs?: number;
  /** Set over this process's environment for the server (e.g. the Go runtime's GOGC). */
  env?: Readonly<Record<string, string>>;
}

export class ServerProcess {
  readonly component: ControlPlaneComponent;
  readonly logPath: string;
  readonly pid: number | undefined;
  /** Settles when the process has gone, with how it went. */
  readonly exited: Promise<string>;
  readonly #child: ChildProcess;
  readonly #stopGraceMs: number;
  #running = true;

  constructor(spec: ServerSpec) {
    this.component = spec.component;
    this.logPath = spec.logPath;
    this.#stopGraceMs = spec.stopGraceMs ?? STOP_GRACE_MS;
    const log = openSync(spec.logPath, 'a');
    try {
      // The binary's watchdog exits when its stdin reaches EOF, which happens when we die, however we die.
      const [command = spec.binary, ...wrapperArgs] = spec.wrapper ?? [];
      const argv = [spec.mode ?? spec.component, ...spec.args];
      this.#child = spawn(command, spec.wrapper ? [...wrapperArgs, spec.binary, ...argv] : argv, {
        stdio: ['pipe', log, log],
        env: { ...process.env, ...spec.env, CONTROLPLANE_EXIT_ON_STDIN_EOF: '1' },
      });
    } finally {
      closeSync(log);
    }
    this.pid = this.#child.pid;
    this.exited = new Promise<string>((resolve) => {
      this.#child.once('error', (error) => resolve(`could not be run: ${error.message}`));
      this.#child.once('exit', (code, signal) =>
        resolve(signal ? `was killed by ${signal}` : `exited with code ${code}`),
      );
    }).then((how) => {
      this.#running = false;
      this.#child.stdin?.destroy();
      return how;
    });
    // A forgotten server must not keep the parent alive; the watchdog then takes it down with the parent.
    this.#child.unref();
    if (this.#child.stdin instanceof Socket) this.#child.stdin.unref();
  }

  get running(): boolean {
    return this.#running;
  }

  /** SIGTERM for an orderly shutdown (etcd syncs its data), SIGKILL if that takes too long. */
  async stop(): Promise<void> {
    if (!this.#running) return;
    this.#child.kill('SIGTERM');
    // This timer also keeps the event loop alive until the (unref'd) child has exited.
    const killer = setTimeout(() => this.#child.kill('SIGKILL'), this.#stopGraceMs);
    await this.exited;
    clearTimeout(killer);
  }

  /** An error about this server that carries the end of its log. */
  async failure(problem: string): Promise<ControlPlaneError> {
    return new ControlPlaneError(this.component, problem, this.logPath, await readLogTail(this.logPath));
  }
}

async function readLogTail(path: string): Promise<string> {
  try {
    const file = await open(path, 'r');
    try {
      const { size } = await file.stat();
      const length = Math.min(size, LOG_TAIL_BYTES);
      const { buffer } = await file.read(Buffer.alloc(length), 0, length, size - length);
      const text = buffer.toString('utf8');
      // Start at a line boundary when the tail cuts into the log.
      return length < size ? text.slice(text.indexOf('\n') + 1) : text;
    } finally {
      await file.close();
    }
  } catch (error) {
    return `(log unreadable: ${String(error)})`;
  }
}
