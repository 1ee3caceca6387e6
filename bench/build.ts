// The benchmark measures the operator as it ships: compiled JavaScript (the image runs
// dist/cli/operator.js), not the TypeScript sources, whose on-the-fly type stripping costs memory.
import { execFile } from 'node:child_process';
import { rm, stat } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { Logger } from '../src/lib/logger.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
/** Inside the repository, so that `node_modules` and the package's `"type": "module"` are found. */
const OUT_DIR = `${ROOT}.cache/bench-operator`;
export const SOURCE_ENTRY = `${ROOT}src/cli/operator.ts`;

/** Compiles `src/` as `npm run build` does, into a scratch directory; returns the entry point. */
export async function buildOperator(log: Logger): Promise<string> {
  await rm(OUT_DIR, { recursive: true, force: true });
  const tsc = `${ROOT}node_modules/.bin/tsc`;
  const args = ['-p', `${ROOT}tsconfig.build.json`, '--outDir', OUT_DIR, '--sourceMap', 'false'];
  try {
    await promisify(execFile)(tsc, args, { cwd: ROOT });
  } catch (error) {
    // Type errors still emit JavaScript; only a missing output is fatal.
    const output = (error as { stdout?: string }).stdout ?? String(error);
    log.warn({ output: output.slice(0, 2000) }, 'tsc reported errors; running what it emitted');
  }
  const entry = `${OUT_DIR}/cli/operator.js`;
  await stat(entry);
  return entry;
}
