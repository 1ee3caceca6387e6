// Reads an OCI archive as it was written, without a container engine: its image configuration and its
// layers, each searched for byte strings as it streams out of the archive.
import { spawn } from 'node:child_process';
import { createGunzip } from 'node:zlib';
import { z } from 'zod';
import { ImageBuildError, runCommand } from './command.ts';

const descriptor = z.object({
  mediaType: z.string(),
  digest: z.string().regex(/^sha256:[0-9a-f]{64}$/),
  size: z.number(),
});
const index = z.object({ manifests: z.array(descriptor).length(1) });
const manifest = z.object({ config: descriptor, layers: z.array(descriptor).min(1) });

/** The parts of the OCI image configuration the checks read. */
export const imageConfigSchema = z.object({
  config: z.object({
    User: z.string().optional(),
    Env: z.array(z.string()).default([]),
    Entrypoint: z.array(z.string()).default([]),
    Cmd: z.array(z.string()).nullish(),
    WorkingDir: z.string().optional(),
    ExposedPorts: z.record(z.string(), z.object({})).optional(),
    Labels: z.record(z.string(), z.string()).nullish(),
  }),
});

export type ImageConfig = z.output<typeof imageConfigSchema>;
export type Layer = z.output<typeof descriptor>;

export interface ArchiveImage {
  config: ImageConfig;
  layers: Layer[];
}

function blobPath(digest: string): string {
  return `blobs/sha256/${digest.slice('sha256:'.length)}`;
}

async function member<T extends z.ZodType>(archive: string, path: string, schema: T): Promise<z.output<T>> {
  return schema.parse(JSON.parse(await runCommand('tar', ['-xOf', archive, path])));
}

export async function readArchive(archive: string): Promise<ArchiveImage> {
  const [entry] = (await member(archive, 'index.json', index)).manifests;
  if (!entry) throw new ImageBuildError(`${archive}: its index names no manifest`);
  const image = await member(archive, blobPath(entry.digest), manifest);
  return {
    config: await member(archive, blobPath(image.config.digest), imageConfigSchema),
    layers: image.layers,
  };
}

export interface LayerScan {
  /** The layer's size once decompressed: the bytes it adds to a root filesystem, headers included. */
  uncompressedBytes: number;
  /** The needles found anywhere in the layer (a file's content is contiguous in a layer's tar stream). */
  found: Set<string>;
}

/** Streams one gzip layer out of the archive and searches it for each needle. */
export function scanLayer(archive: string, layer: Layer, needles: readonly string[]): Promise<LayerScan> {
  if (!layer.mediaType.endsWith('+gzip')) {
    return Promise.reject(new ImageBuildError(`layer ${layer.digest} is ${layer.mediaType}, not gzip`));
  }
  const patterns = needles.map((needle) => ({ needle, bytes: Buffer.from(needle) }));
  const overlap = Math.max(0, ...patterns.map(({ bytes }) => bytes.length - 1));
  const found = new Set<string>();
  let uncompressedBytes = 0;
  let carry = Buffer.alloc(0);
  const tar = spawn('tar', ['-xOf', archive, blobPath(layer.digest)], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  tar.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  // Large chunks: the needles are searched once per chunk.
  const gunzip = tar.stdout.pipe(createGunzip({ chunkSize: 1 << 20 }));
  gunzip.on('data', (chunk: Buffer) => {
    uncompressedBytes += chunk.length;
    // The previous chunk's tail is searched again, so that a needle split between two chunks is found.
    const window = Buffer.concat([carry, chunk]);
    for (const { needle, bytes } of patterns)
      if (!found.has(needle) && window.includes(bytes)) found.add(needle);
    carry = window.subarray(Math.max(0, window.length - overlap));
  });
  const exited = new Promise<void>((resolve, reject) => {
    tar.once('error', reject);
    tar.once('close', (code) =>
      code === 0 ? resolve() : reject(new ImageBuildError(`tar could not read ${layer.digest}: ${stderr}`)),
    );
  });
  const drained = new Promise<void>((resolve, reject) => {
    gunzip.once('end', resolve);
    gunzip.once('error', reject);
  });
  return Promise.all([exited, drained]).then(() => ({ uncompressedBytes, found }));
}
