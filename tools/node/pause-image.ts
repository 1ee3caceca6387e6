// Builds the node's sandbox image: the static pause binary (tools/node/pause, no cgo) in an OCI image
// archive of one uncompressed layer, named for `ctr images import`. Made with the Go toolchain and GNU tar
// only; the layer is reproducible (sorted, owned by root, dated 1970).
import { createHash } from 'node:crypto';
import { mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  PAUSE_ARCHIVE,
  PAUSE_SOURCE_DIR,
  pauseImageCacheDir,
  SANDBOX_IMAGE,
} from '../../src/local/node/pause-image.ts';
import { run } from '../../src/local/node/run.ts';
import { go } from '../helm/tool-cache.ts';

const REPRODUCIBLE_TAR = [
  '--sort=name',
  '--owner=0',
  '--group=0',
  '--numeric-owner',
  '--mtime=@0',
  '--format=gnu',
];

/** Returns the archive's path, building it first if the cache lacks it. */
export async function ensurePauseImage(): Promise<string> {
  const dir = await pauseImageCacheDir();
  const archive = join(dir, PAUSE_ARCHIVE);
  if (await exists(archive)) return archive;
  const staging = `${dir}.building-${process.pid}`;
  await rm(staging, { recursive: true, force: true });
  try {
    await build(staging);
    await rename(staging, dir).catch(async (error: NodeJS.ErrnoException) => {
      // Another process finished the same build first: its result is as good as ours.
      if (!(await exists(archive))) throw error;
    });
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
  return archive;
}

async function build(staging: string): Promise<void> {
  const rootfs = join(staging, 'rootfs');
  const layout = join(staging, 'oci');
  const blobs = join(layout, 'blobs', 'sha256');
  await mkdir(rootfs, { recursive: true });
  await mkdir(blobs, { recursive: true });
  await go(['build', '-trimpath', '-ldflags=-s -w', '-o', join(rootfs, 'pause'), '.'], {
    cwd: PAUSE_SOURCE_DIR,
    env: { CGO_ENABLED: '0' },
  });
  const layerTar = join(staging, 'layer.tar');
  await run('tar', [...REPRODUCIBLE_TAR, '-C', rootfs, '-cf', layerTar, 'pause']);
  const layer = await blob(blobs, await readFile(layerTar));
  const config = await blob(
    blobs,
    json({
      architecture: 'amd64',
      os: 'linux',
      config: { Entrypoint: ['/pause'], User: '65535:65535' },
      rootfs: { type: 'layers', diff_ids: [layer.digest] },
    }),
  );
  const manifest = await blob(
    blobs,
    json({
      schemaVersion: 2,
      mediaType: 'application/vnd.oci.image.manifest.v1+json',
      config: { mediaType: 'application/vnd.oci.image.config.v1+json', ...config },
      layers: [{ mediaType: 'application/vnd.oci.image.layer.v1.tar', ...layer }],
    }),
  );
  await writeFile(join(layout, 'oci-layout'), json({ imageLayoutVersion: '1.0.0' }));
  await writeFile(
    join(layout, 'index.json'),
    json({
      schemaVersion: 2,
      mediaType: 'application/vnd.oci.image.index.v1+json',
      manifests: [
        {
          mediaType: 'application/vnd.oci.image.manifest.v1+json',
          ...manifest,
          platform: { architecture: 'amd64', os: 'linux' },
          annotations: {
            'io.containerd.image.name': SANDBOX_IMAGE,
            'org.opencontainers.image.ref.name': SANDBOX_IMAGE.split(':').at(-1) ?? 'latest',
          },
        },
      ],
    }),
  );
  await run('tar', [...REPRODUCIBLE_TAR, '-C', layout, '-cf', join(staging, PAUSE_ARCHIVE), '.']);
  await rm(rootfs, { recursive: true });
  await rm(layout, { recursive: true });
  await rm(layerTar);
}

async function blob(dir: string, content: Buffer): Promise<{ digest: string; size: number }> {
  const hex = createHash('sha256').update(content).digest('hex');
  await writeFile(join(dir, hex), content);
  return { digest: `sha256:${hex}`, size: content.length };
}

function json(value: unknown): Buffer {
  return Buffer.from(JSON.stringify(value));
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}
