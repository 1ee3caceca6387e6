// Tools the tests and the generator build from Go modules (helm, the Argo CD health runner). They live in a
// cache outside the repository, keyed by version, so that every clone on a machine shares one build.
import { execFile } from 'node:child_process';
import { access, constants, mkdir, mkdtemp, rename, rm } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

/** A tool could not be built or found; the message says what to install or set. */
export class ToolUnavailableError extends Error {
  override readonly name = 'ToolUnavailableError';
}

export function toolCacheDir(): string {
  const cacheHome = process.env.XDG_CACHE_HOME || join(homedir(), '.cache');
  return join(cacheHome, 'gpucloud-operator', 'tools');
}

/**
 * Returns `<cache>/<key>/<binary>`, building it first when missing. The build writes into a fresh sibling
 * directory that is renamed into place, so an interrupted build leaves nothing that looks finished.
 */
export async function cachedTool(
  key: string,
  binary: string,
  build: (outDir: string) => Promise<void>,
): Promise<string> {
  const dir = join(toolCacheDir(), key);
  const path = join(dir, binary);
  if (await isExecutable(path)) return path;
  await mkdir(dirname(dir), { recursive: true });
  const staging = await mkdtemp(`${dir}.building-`);
  try {
    await build(staging);
    await rename(staging, dir).catch(async (error: NodeJS.ErrnoException) => {
      // Another process finished the same build first: its result is as good as ours.
      if (!(await isExecutable(path))) throw error;
    });
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
  return path;
}

/** Runs the Go toolchain; its diagnostics go to our stderr, where a long first build shows progress. */
export async function go(
  args: readonly string[],
  options: { cwd?: string; env?: Record<string, string> } = {},
): Promise<string> {
  try {
    const { stdout, stderr } = await execFileAsync('go', args, {
      cwd: options.cwd,
      env: { ...process.env, ...options.env },
      maxBuffer: 64 * 1024 * 1024,
    });
    if (stderr) process.stderr.write(stderr);
    return stdout;
  } catch (error) {
    const { code, stderr } = error as NodeJS.ErrnoException & { stderr?: string };
    if (code === 'ENOENT') {
      throw new ToolUnavailableError('the Go toolchain (`go`) is not on PATH; install Go 1.26 or newer');
    }
    throw new ToolUnavailableError(`go ${args.join(' ')} failed:\n${stderr ?? String(error)}`);
  }
}

export async function isExecutable(path: string): Promise<boolean> {
  return access(path, constants.X_OK).then(
    () => true,
    () => false,
  );
}
