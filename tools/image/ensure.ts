// `npm run image`: the operator's image, built from the Dockerfile with buildah on a stand-in base, as an
// OCI archive in the cache. Prints the archive's path on stdout (progress on stderr); a warm run whose
// inputs are unchanged prints the cached archive's path in well under a second.
import { access, mkdir, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { baseSpec, ensureBase } from './base.ts';
import { BUILD_SETTINGS, buildArchive } from './build.ts';
import { formatDuration } from './command.ts';
import { ensureHostPackages } from './host-packages.ts';
import { inputsHash } from './inputs.ts';
import { containersEnv, dockerfileNodeVersion, imagePaths } from './settings.ts';

/** The repository the image is named in, in local storage and in the archive's index. */
export const IMAGE_REPOSITORY = 'localhost/gpucloud-operator';

export interface BuiltImage {
  /** The OCI archive (`oci-archive:` transport). */
  archive: string;
  /** The name the archive's index gives the image: `localhost/gpucloud-operator:<inputs hash>`. */
  reference: string;
  /** The containers configuration environment (CONTAINERS_CONF, …) to run buildah with against it. */
  env: NodeJS.ProcessEnv;
}

export async function ensureImage(progress: (line: string) => void): Promise<BuiltImage> {
  const paths = imagePaths();
  const base = baseSpec(dockerfileNodeVersion());
  const hash = await inputsHash({ base: base.key, build: BUILD_SETTINGS });
  const reference = `${IMAGE_REPOSITORY}:${hash}`;
  const archive = join(paths.archives, `gpucloud-operator-${hash}.oci.tar`);
  const env = await containersEnv(paths);
  if (await exists(archive)) return { archive, reference, env };

  const started = Date.now();
  progress(`building the operator image ${reference} (inputs changed or first build)`);
  await ensureHostPackages(progress);
  await ensureBase(base, paths, env, progress);
  progress('  building the Dockerfile with buildah; about 2 minutes on 2 cores (more on a busy machine)');
  await mkdir(paths.archives, { recursive: true });
  await buildArchive(reference, archive, paths, env, progress);
  await removeOtherArchives(paths.archives, archive);
  progress(`built ${archive} in ${formatDuration(Date.now() - started)}`);
  return { archive, reference, env };
}

/** Earlier builds' archives: only the current one is ever used. */
async function removeOtherArchives(dir: string, keep: string): Promise<void> {
  for (const name of await readdir(dir)) {
    const path = join(dir, name);
    // A `.partial-<pid>` file is another build's work in progress.
    if (name.endsWith('.oci.tar') && path !== keep) await rm(path, { force: true });
  }
}

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}

if (import.meta.main) {
  try {
    console.log((await ensureImage((line) => console.error(line))).archive);
  } catch (error) {
    console.error(error instanceof Error ? error.message : String(error));
    process.exitCode = 1;
  }
}
