// Builds the control plane binary (etcd, kube-apiserver, kube-controller-manager, kube-scheduler and the
// kubelet from their Go modules, see main.go) into the cache outside the repository, unless the cache
// already holds a build of these exact sources.
import { spawn } from 'node:child_process';
import { access, constants, mkdir, rename, rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import { createInterface } from 'node:readline';
import {
  CONTROLPLANE_BIN_ENV,
  CONTROLPLANE_SOURCE_DIR,
  cachedBinaryPath,
  kubernetesVersion,
  resolveControlPlaneBinary,
} from '../../src/local/controlplane/binary.ts';

const PROGRESS_INTERVAL_MS = 30_000;
const ERROR_TAIL_LINES = 60;

/** Returns the path of a runnable control plane binary, building it first if needed. */
export async function ensureControlPlaneBinary(progress: (line: string) => void): Promise<string> {
  if (process.env[CONTROLPLANE_BIN_ENV]) return resolveControlPlaneBinary();
  const binary = await cachedBinaryPath();
  if (await isExecutable(binary)) return binary;
  await build(binary, progress);
  return binary;
}

async function build(binary: string, progress: (line: string) => void): Promise<void> {
  const version = await kubernetesVersion();
  progress(
    `building etcd, kube-apiserver, kube-controller-manager, kube-scheduler and the kubelet ${version} from Go ` +
      `modules into ${binary}; a first build takes about 7 minutes on 2 cores (more on a busy machine), later runs reuse it`,
  );
  await mkdir(dirname(binary), { recursive: true });
  // Build beside the target and rename, so that an interrupted or concurrent build never leaves half a binary.
  const partial = `${binary}.partial-${process.pid}`;
  const started = Date.now();
  try {
    await goBuild(
      ['build', '-v', '-trimpath', '-ldflags', versionLdflags(version), '-o', partial, '.'],
      progress,
    );
    await rename(partial, binary);
  } finally {
    await rm(partial, { force: true });
  }
  progress(`built in ${formatDuration(Date.now() - started)}`);
}

/** Stamps the version that /version reports; an unstamped build reports v0.0.0-master. */
function versionLdflags(version: string): string {
  const [major, minor] = version.replace(/^v/, '').split('.');
  const pkg = 'k8s.io/component-base/version';
  return [
    '-s',
    '-w',
    `-X ${pkg}.gitVersion=${version}`,
    `-X ${pkg}.gitMajor=${major}`,
    `-X ${pkg}.gitMinor=${minor}`,
    `-X ${pkg}.gitTreeState=clean`,
  ].join(' ');
}

/** Runs `go`, reporting how many packages it has compiled every so often; fails with its last lines. */
function goBuild(args: string[], progress: (line: string) => void): Promise<void> {
  const child = spawn('go', args, { cwd: CONTROLPLANE_SOURCE_DIR, stdio: ['ignore', 'inherit', 'pipe'] });
  const started = Date.now();
  let packages = 0;
  const tail: string[] = [];
  createInterface({ input: child.stderr }).on('line', (line) => {
    packages += 1;
    tail.push(line);
    if (tail.length > ERROR_TAIL_LINES) tail.shift();
  });
  const ticker = setInterval(() => {
    progress(
      `  ${formatDuration(Date.now() - started)}: ${packages} packages compiled, last ${tail.at(-1) ?? '-'}`,
    );
  }, PROGRESS_INTERVAL_MS);
  return new Promise<void>((resolve, reject) => {
    child.once('error', (error) => reject(new Error(`could not run go: ${error.message}`)));
    child.once('close', (code) => {
      if (code === 0) resolve();
      else reject(new Error(`go ${args[0]} failed with code ${code}:\n${tail.join('\n')}`));
    });
  }).finally(() => clearInterval(ticker));
}

function formatDuration(ms: number): string {
  const seconds = Math.round(ms / 1000);
  return `${Math.floor(seconds / 60)}m${String(seconds % 60).padStart(2, '0')}s`;
}

async function isExecutable(path: string): Promise<boolean> {
  return access(path, constants.X_OK).then(
    () => true,
    () => false,
  );
}
