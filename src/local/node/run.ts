import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

/** A host command the local node needs failed; carries the command and what it said. */
export class NodeCommandError extends Error {
  override readonly name = 'NodeCommandError';
  readonly command: string;
  readonly stderr: string;

  constructor(command: string, stderr: string) {
    super(`\`${command}\` failed: ${stderr.trim()}`);
    this.command = command;
    this.stderr = stderr;
  }
}

/** Runs a command to completion; its stdout, or a NodeCommandError with its stderr. */
export async function run(command: string, args: readonly string[]): Promise<string> {
  try {
    const { stdout } = await execFileAsync(command, args, { maxBuffer: 16 * 1024 * 1024 });
    return stdout;
  } catch (error) {
    const { stderr, message } = error as { stderr?: string; message: string };
    throw new NodeCommandError([command, ...args].join(' '), stderr || message);
  }
}

/** Runs a command inside the network namespace of process `pid`. */
export function runInNetns(pid: number, command: string, args: readonly string[]): Promise<string> {
  return run('nsenter', [`--target=${pid}`, '--net', '--', command, ...args]);
}
