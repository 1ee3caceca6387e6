// Where the image build keeps its state, and the container tools' configuration it runs them with. Both are
// the project's own, under the cache outside the repository: the host's /etc/containers is never changed.
import { readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';

export const REPO_ROOT = resolve(import.meta.dirname, '..', '..');

/** The Node version the Dockerfile builds on (its `ARG NODE_VERSION`), so the stand-in base matches it. */
export function dockerfileNodeVersion(): string {
  const dockerfile = readFileSync(join(REPO_ROOT, 'Dockerfile'), 'utf8');
  const match = /^ARG NODE_VERSION=(\S+)$/m.exec(dockerfile);
  if (!match?.[1]) throw new Error('the Dockerfile has no `ARG NODE_VERSION=...` line');
  return match[1];
}

/** The base the Dockerfile names, in the fully qualified form buildah resolves `node:<v>-slim` to. */
export function baseImageName(nodeVersion: string): string {
  return `docker.io/library/node:${nodeVersion}-slim`;
}

/** The name the built image is committed under in the project's local storage. */
export const IMAGE_NAME = 'localhost/gpucloud-operator:local';

/** The CA bundle of the host: it trusts the proxy the npm registry is reached through. */
export const HOST_CA_BUNDLE = '/etc/ssl/certs/ca-certificates.crt';

export function imageCacheDir(): string {
  const cacheHome = process.env.XDG_CACHE_HOME || join(homedir(), '.cache');
  return join(cacheHome, 'gpucloud-operator', 'image');
}

/** Paths of the build's own container configuration, storage and output. */
export function imagePaths(cache = imageCacheDir()) {
  return {
    cache,
    config: join(cache, 'containers'),
    containersConf: join(cache, 'containers', 'containers.conf'),
    storageConf: join(cache, 'containers', 'storage.conf'),
    /** Mounted into the build's RUN steps only: tells npm to trust the host's CA bundle. */
    buildNpmrc: join(cache, 'containers', 'build-npmrc'),
    graphroot: join(cache, 'storage'),
    // Mount and lock state: belongs with the machine's run time, not with the cache.
    runroot: '/run/gpucloud-operator/containers',
    baseMarker: join(cache, 'base.json'),
    archives: join(cache, 'archives'),
    work: join(cache, 'work'),
  };
}

export type ImagePaths = ReturnType<typeof imagePaths>;

// cgroupfs: no systemd manages this machine's cgroups. runc: crun refuses its hybrid cgroup v1/v2 layout.
// Events to a file: there is no journald. nofile: npm ci opens many files at once and buildah's own
// default here is 1024; never above the machine's hard limit (20000), which runc could not raise to.
const CONTAINERS_CONF = `[containers]
default_ulimits = ["nofile=20000:20000"]

[engine]
cgroup_manager = "cgroupfs"
events_logger = "file"
runtime = "runc"
`;

function storageConf(paths: ImagePaths): string {
  return `[storage]
driver = "overlay"
graphroot = "${paths.graphroot}"
runroot = "${paths.runroot}"
`;
}

/**
 * Writes the configuration files and answers the environment that points buildah at them. Cheap and
 * idempotent: every run writes them, so a changed setting here takes effect without a cache to clear.
 */
export async function containersEnv(paths: ImagePaths): Promise<NodeJS.ProcessEnv> {
  await mkdir(paths.config, { recursive: true });
  await writeFile(paths.containersConf, CONTAINERS_CONF);
  await writeFile(paths.storageConf, storageConf(paths));
  await writeFile(paths.buildNpmrc, `cafile=${HOST_CA_BUNDLE}\n`);
  return {
    ...process.env,
    CONTAINERS_CONF: paths.containersConf,
    CONTAINERS_STORAGE_CONF: paths.storageConf,
    BUILDAH_ISOLATION: 'oci',
  };
}
