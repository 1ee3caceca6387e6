// Runs the tools the image build needs (apt-get, mmdebstrap, buildah, npm), reporting what they are doing
// every so often, and failing with the last lines they wrote so that a failure says why.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

const PROGRESS_INTERVAL_MS = 30_000;
const ERROR_TAIL_LINES = 40;

/** A step of the image build failed; the message holds the command and its last lines of output. */
export class ImageBuildError extends Error {
  override readonly name = 'ImageBuildError';
}

export interface CommandOptions {
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  progress?: (line: string) => void;
  /** Output lines worth passing on as progress as they come (the rest only count, and end up in the tail). */
  notable?: RegExp;
}

/** Runs `command`, answering its stdout; rejects with its output's tail when it exits non-zero. */
export function runCommand(
  command: string,
  args: readonly string[],
  options: CommandOptions = {},
): Promise<string> {
  const child = spawn(command, args, {
    cwd: options.cwd,
    env: options.env ?? process.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const started = Date.now();
  const tail: string[] = [];
  let stdout = '';
  const onLine = (line: string) => {
    tail.push(line);
    if (tail.length > ERROR_TAIL_LINES) tail.shift();
    if (options.notable?.test(line)) options.progress?.(`  ${line}`);
  };
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
  });
  createInterface({ input: child.stdout }).on('line', onLine);
  createInterface({ input: child.stderr }).on('line', onLine);
  const ticker = options.progress
    ? setInterval(() => {
        options.progress?.(
          `  ${formatDuration(Date.now() - started)}: ${command} ${args[0] ?? ''}, last: ${tail.at(-1) ?? '-'}`,
        );
      }, PROGRESS_INTERVAL_MS)
    : undefined;
  return new Promise<string>((resolve, reject) => {
    child.once('error', (error: NodeJS.ErrnoException) =>
      reject(
        new ImageBuildError(
          `could not run ${command}: ${error.code === 'ENOENT' ? 'not installed' : error.message}`,
        ),
      ),
    );
    child.once('close', (code, signal) => {
      if (code === 0) resolve(stdout);
      else
        reject(
          new ImageBuildError(
            `${command} ${args.join(' ')} failed (${signal ?? `exit code ${code}`}):\n${tail.join('\n')}`,
          ),
        );
    });
  }).finally(() => clearInterval(ticker));
}

export function formatDuration(ms: number): string {
  const seconds = Math.round(ms / 1000);
  return `${Math.floor(seconds / 60)}m${String(seconds % 60).padStart(2, '0')}s`;
}
