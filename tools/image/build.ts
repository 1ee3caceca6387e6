// Builds the repository's Dockerfile, unchanged, with buildah on the stand-in base, and writes the result
// as an OCI archive. The npm registry is reached through a proxy that the host's CA bundle trusts and the
// base's does not: the host's bundle and an npmrc naming it are mounted into the build's RUN steps only,
// so neither is in any layer (the final stage has no RUN step, and copies only node_modules and dist).
import { rename, rm } from 'node:fs/promises';
import { runCommand } from './command.ts';
import { HOST_CA_BUNDLE, type ImagePaths, REPO_ROOT } from './settings.ts';

/** Where npm looks for its global configuration when node is /usr/local/bin/node (prefix /usr/local). */
const GLOBAL_NPMRC = '/usr/local/etc/npmrc';

export const BUILD_SETTINGS = {
  // The base exists only in local storage; asking a registry for it would fail.
  pull: 'never',
  // npm ci reaches the registry as the host does; the build starts no network of its own.
  network: 'host',
  format: 'oci',
} as const;

/** Builds the Dockerfile into local storage as `reference`, then writes it to `archive` (atomically). */
export async function buildArchive(
  reference: string,
  archive: string,
  paths: ImagePaths,
  env: NodeJS.ProcessEnv,
  progress: (line: string) => void,
): Promise<void> {
  await runCommand(
    'buildah',
    [
      'build',
      `--pull=${BUILD_SETTINGS.pull}`,
      `--network=${BUILD_SETTINGS.network}`,
      `--format=${BUILD_SETTINGS.format}`,
      // Over the base's own bundle, so that the mount point is a file the base already has.
      '--volume',
      `${HOST_CA_BUNDLE}:${HOST_CA_BUNDLE}:ro`,
      '--volume',
      `${paths.buildNpmrc}:${GLOBAL_NPMRC}:ro`,
      '--file',
      'Dockerfile',
      '--tag',
      reference,
      REPO_ROOT,
    ],
    { env, cwd: REPO_ROOT, progress, notable: /STEP \d+\/\d+:/ },
  );
  const partial = `${archive}.partial-${process.pid}`;
  try {
    await runCommand('buildah', ['push', '--quiet', reference, `oci-archive:${partial}:${reference}`], {
      env,
    });
    await rename(partial, archive);
  } finally {
    await rm(partial, { force: true });
    // The archive is the result; the base stays in storage for the next build, the image need not.
    await runCommand('buildah', ['rmi', reference], { env }).catch(() => undefined);
  }
}
