// Where the control plane binary (etcd + kube-apiserver, built from tools/controlplane) lives. The cache
// is outside the repository so that fresh clones on the same machine, as in CI, reuse one build; its key
// covers everything that changes the binary: the module's files and the Go toolchain.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { access, constants, readdir, readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { ControlPlaneBinaryMissingError } from './errors.ts';

/** Set to a binary's path to use it instead of the cached build. */
export const CONTROLPLANE_BIN_ENV = 'GPUCLOUD_CONTROLPLANE_BIN';

export const CONTROLPLANE_SOURCE_DIR = fileURLToPath(
  new URL('../../../tools/controlplane/', import.meta.url),
);

const execFileAsync = promisify(execFile);

export function controlPlaneCacheRoot(): string {
  const cacheHome = process.env.XDG_CACHE_HOME || join(homedir(), '.cache');
  return join(cacheHome, 'gpucloud-operator', 'controlplane');
}

/** The Kubernetes release the binary is built from, as pinned in tools/controlplane/go.mod. */
export async function kubernetesVersion(): Promise<string> {
  const goMod = await readFile(join(CONTROLPLANE_SOURCE_DIR, 'go.mod'), 'utf8');
  const match = /^\s*k8s\.io\/kubernetes (v\d+\.\d+\.\d+)\s*$/m.exec(goMod);
  if (!match?.[1]) {
    throw new Error(`no k8s.io/kubernetes requirement in ${join(CONTROLPLANE_SOURCE_DIR, 'go.mod')}`);
  }
  return match[1];
}

/** Path of the cached build for the current sources and Go toolchain (which may not exist yet). */
export async function cachedBinaryPath(): Promise<string> {
  const hash = createHash('sha256');
  hash.update(`go:${await goVersion()}\n`);
  const files = (await readdir(CONTROLPLANE_SOURCE_DIR, { withFileTypes: true }))
    .filter((entry) => entry.isFile())
    .map((entry) => entry.name)
    .sort();
  for (const file of files) {
    hash.update(`${file}\n`);
    hash.update(await readFile(join(CONTROLPLANE_SOURCE_DIR, file)));
  }
  return join(controlPlaneCacheRoot(), hash.digest('hex').slice(0, 16), 'controlplane');
}

/** The binary to run: the override if set, else the cached build, which must already exist. */
export async function resolveControlPlaneBinary(): Promise<string> {
  const override = process.env[CONTROLPLANE_BIN_ENV];
  const path = override || (await cachedBinaryPath());
  try {
    await access(path, constants.X_OK);
  } catch {
    throw new ControlPlaneBinaryMissingError(
      path,
      override
        ? `${CONTROLPLANE_BIN_ENV} names a file that is missing or not executable`
        : 'build it with `node tools/controlplane/ensure.ts` (npm test does this first)',
    );
  }
  return path;
}

export async function goVersion(): Promise<string> {
  try {
    const { stdout } = await execFileAsync('go', ['env', 'GOVERSION']);
    return stdout.trim();
  } catch (error) {
    throw new ControlPlaneBinaryMissingError(
      controlPlaneCacheRoot(),
      `the cache key needs the Go toolchain (\`go env GOVERSION\` failed: ${String(error)}); install Go or set ${CONTROLPLANE_BIN_ENV}`,
    );
  }
}
