// The image as it ships (`npm run image`): how big it is, and how long it takes to start — `--help`, from
// starting runc to the container's exit, under the chart's security context (tools/image/run.ts). That is
// the floor of every start of the operator's Pod, before it connects to anything.
import { stat } from 'node:fs/promises';
import type { Logger } from '../src/lib/logger.ts';
import { readArchive, scanLayer } from '../tools/image/archive.ts';
import { ensureImage } from '../tools/image/ensure.ts';
import { mountImage, runImage } from '../tools/image/run.ts';
import { type Distribution, distribution, round } from './stats.ts';

/** Starts measured, after one that warms the page cache (a node that has pulled the image has it on disk). */
const STARTS = 10;

const mb = (bytes: number) => round(bytes / 1e6);

export interface ImageResult {
  reference: string;
  /** The OCI archive: what a registry would store and a node would pull. */
  archiveMb: number;
  /** Each layer, base first: compressed (pulled) and unpacked (on the node's disk). */
  layers: Array<{ compressedMb: number; unpackedMb: number }>;
  /** `--help` to exit: node, every module of the entry point loaded, the usage printed. */
  helpMs: Distribution;
  /** `node -e 0` in the same container: the part of the above that is runc and Node themselves. */
  bareNodeMs: Distribution;
}

export async function measureImage(log: Logger): Promise<ImageResult> {
  const image = await ensureImage((line) => log.info(line));
  const { layers } = await readArchive(image.archive);
  const unpacked = await Promise.all(layers.map((layer) => scanLayer(image.archive, layer, [])));
  const root = await mountImage(image);
  try {
    const help = await starts(() => runImage(root, { args: ['--help'] }));
    const bare = await starts(() => runImage(root, { entrypoint: ['node', '-e', '0'] }));
    return {
      reference: image.reference,
      archiveMb: mb((await stat(image.archive)).size),
      layers: layers.map((layer, i) => ({
        compressedMb: mb(layer.size),
        unpackedMb: mb(unpacked[i]?.uncompressedBytes ?? Number.NaN),
      })),
      helpMs: help,
      bareNodeMs: bare,
    };
  } finally {
    await root.remove();
  }
}

async function starts(start: () => ReturnType<typeof runImage>): Promise<Distribution> {
  const times: number[] = [];
  for (let i = 0; i <= STARTS; i++) {
    const run = await start();
    if (run.code !== 0) throw new Error(`the image exited with ${run.code}: ${run.stderr.slice(0, 500)}`);
    if (i > 0) times.push(run.ms);
  }
  return distribution(times);
}
