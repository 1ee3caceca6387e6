// Where the node's sandbox image lives: an OCI archive of the static pause binary built from
// tools/node/pause, packed by tools/node/pause-image.ts into the tool cache, keyed by everything that
// changes it (the sources, the packer, the Go toolchain).
import { createHash } from 'node:crypto';
import { access, readdir, readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { controlPlaneCacheRoot, goVersion } from '../controlplane/binary.ts';

/** The name containerd knows the image by, and the CRI plugin's `sandbox_image`. */
export const SANDBOX_IMAGE = 'gpucloud.local/pause:1';
export const PAUSE_SOURCE_DIR = fileURLToPath(new URL('../../../tools/node/pause/', import.meta.url));
const PACKER = fileURLToPath(new URL('../../../tools/node/pause-image.ts', import.meta.url));
export const PAUSE_ARCHIVE = 'pause-image.tar';

export class PauseImageMissingError extends Error {
  override readonly name = 'PauseImageMissingError';
}

/** The cache directory for the current sources (which may not exist yet). */
export async function pauseImageCacheDir(): Promise<string> {
  const hash = createHash('sha256');
  hash.update(`go:${await goVersion()}\nimage:${SANDBOX_IMAGE}\n`);
  hash.update(await readFile(PACKER));
  for (const file of (await readdir(PAUSE_SOURCE_DIR)).sort()) {
    hash.update(`${file}\n`);
    hash.update(await readFile(join(PAUSE_SOURCE_DIR, file)));
  }
  return join(dirname(controlPlaneCacheRoot()), 'node', `pause-${hash.digest('hex').slice(0, 16)}`);
}

/** The archive to import, which must already have been built. */
export async function resolvePauseImage(): Promise<string> {
  const archive = join(await pauseImageCacheDir(), PAUSE_ARCHIVE);
  try {
    await access(archive);
  } catch {
    throw new PauseImageMissingError(
      `the sandbox image is not at ${archive}: build it with \`node tools/node/ensure.ts\` (npm test does this first)`,
    );
  }
  return archive;
}
