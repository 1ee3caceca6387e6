// Runs the built image as a kubelet would under the chart's security context: runc, the image's own user,
// entry point, environment and working directory, a read-only root filesystem, no capabilities, no new
// privileges, and a fresh tmpfs at /tmp (the chart's emptyDir, the only writable place).
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { type ImageConfig, readArchive } from './archive.ts';
import { ImageBuildError, runCommand } from './command.ts';
import type { BuiltImage } from './ensure.ts';

/** The state directory of our runc containers, apart from any other runc user's. */
const RUNC_ROOT = '/run/gpucloud-operator/runc';
const RUN_TIMEOUT_MS = 60_000;

/** The root filesystem of the image, unpacked from its archive by buildah, and its configuration. */
export interface ImageRoot {
  rootfs: string;
  config: ImageConfig;
  /** Unmounts the root filesystem and removes it from local storage. */
  remove(): Promise<void>;
}

export async function mountImage(image: BuiltImage): Promise<ImageRoot> {
  const { env } = image;
  const { config } = await readArchive(image.archive);
  const container = (
    await runCommand('buildah', ['from', '--quiet', `oci-archive:${image.archive}`], { env })
  ).trim();
  const remove = async () => {
    const imageId = await runCommand(
      'buildah',
      ['inspect', '--type', 'container', '--format', '{{.FromImageID}}', container],
      { env },
    );
    await runCommand('buildah', ['rm', container], { env });
    await runCommand('buildah', ['rmi', imageId.trim()], { env });
  };
  try {
    const rootfs = (await runCommand('buildah', ['mount', container], { env })).trim();
    return { rootfs, config, remove };
  } catch (error) {
    await remove();
    throw error;
  }
}

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
  /** From starting runc to the container's exit: what a start-up of the image costs. */
  ms: number;
}

export interface RunOptions {
  /** Replaces the image's entry point (the command still runs as the image's user, under the same limits). */
  entrypoint?: readonly string[];
  args?: readonly string[];
}

/** The image's `USER` as numbers: a name would need /etc/passwd, which the kubelet cannot check. */
export function numericUser(config: ImageConfig): { uid: number; gid: number } {
  const match = /^(\d+)(?::(\d+))?$/.exec(config.config.User ?? '');
  if (!match?.[1])
    throw new ImageBuildError(`the image's user is ${JSON.stringify(config.config.User)}, not numeric`);
  return { uid: Number(match[1]), gid: Number(match[2] ?? match[1]) };
}

const runtimeSpec = z.looseObject({
  process: z.looseObject({}),
  root: z.looseObject({}),
  mounts: z.array(z.looseObject({ destination: z.string() })),
});

let runs = 0;

export async function runImage(root: ImageRoot, options: RunOptions = {}): Promise<RunResult> {
  const bundle = await mkdtemp(join(tmpdir(), 'gpucloud-image-run-'));
  const id = `gpucloud-image-${process.pid}-${++runs}`;
  try {
    await runCommand('runc', ['spec', '--bundle', bundle]);
    const spec = runtimeSpec.parse(JSON.parse(await readFile(join(bundle, 'config.json'), 'utf8')));
    const image = root.config.config;
    const noCapabilities = { bounding: [], effective: [], permitted: [], inheritable: [], ambient: [] };
    spec.process = {
      ...spec.process,
      terminal: false,
      user: numericUser(root.config),
      args: [
        ...(options.entrypoint ?? image.Entrypoint),
        ...(options.entrypoint ? [] : (image.Cmd ?? [])),
        ...(options.args ?? []),
      ],
      env: image.Env,
      cwd: image.WorkingDir || '/',
      capabilities: noCapabilities,
      noNewPrivileges: true,
    };
    spec.root = { path: root.rootfs, readonly: true };
    spec.mounts.push({
      destination: '/tmp',
      type: 'tmpfs',
      source: 'tmpfs',
      options: ['nosuid', 'nodev', 'size=64m'],
    });
    await writeFile(join(bundle, 'config.json'), JSON.stringify(spec));
    return await runc(['--root', RUNC_ROOT, 'run', '--bundle', bundle, id]);
  } finally {
    // `runc run` removes the container as it exits; this is for a run that did not get that far.
    await runCommand('runc', ['--root', RUNC_ROOT, 'delete', '--force', id]).catch(() => undefined);
    await rm(bundle, { recursive: true, force: true });
  }
}

function runc(args: readonly string[]): Promise<RunResult> {
  const started = process.hrtime.bigint();
  // runc passes the signal on to the container: an image that hangs ends with code null, not a hung caller.
  const child = spawn('runc', args, { stdio: ['ignore', 'pipe', 'pipe'], timeout: RUN_TIMEOUT_MS });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  return new Promise((resolve, reject) => {
    child.once('error', (error) => reject(new ImageBuildError(`could not run runc: ${error.message}`)));
    child.once('close', (code) => {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      resolve({ code, stdout, stderr, ms });
    });
  });
}
