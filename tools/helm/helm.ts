import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ensureHelm } from './ensure.ts';

const execFileAsync = promisify(execFile);

export const CHART_DIR = join(import.meta.dirname, '..', '..', 'deploy', 'helm', 'gpucloud-operator');

/** helm exited non-zero; `stderr` says why (a failed template check, a rejected value, …). */
export class HelmError extends Error {
  override readonly name = 'HelmError';
  readonly stderr: string;

  constructor(args: readonly string[], stderr: string) {
    super(`helm ${args.join(' ')} failed: ${stderr.trim()}`);
    this.stderr = stderr;
  }
}

/** Runs helm (built on first use) and returns its standard output. */
export async function helm(args: readonly string[], env: Record<string, string> = {}): Promise<string> {
  const binary = await ensureHelm();
  try {
    const { stdout } = await execFileAsync(binary, args, {
      env: { ...process.env, ...env },
      maxBuffer: 64 * 1024 * 1024,
    });
    return stdout;
  } catch (error) {
    throw new HelmError(args, (error as { stderr?: string }).stderr ?? String(error));
  }
}
