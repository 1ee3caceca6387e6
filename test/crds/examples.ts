import { readdir, readFile } from 'node:fs/promises';
import { loadAll } from 'js-yaml';

export const EXAMPLES_DIR = new URL('../../examples/', import.meta.url);

export interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string };
  spec?: Record<string, unknown>;
  [field: string]: unknown;
}

/** Every document of every examples/*.yaml file, with the file it came from. */
export async function readExamples(): Promise<Array<{ file: string; manifest: Manifest }>> {
  const files = (await readdir(EXAMPLES_DIR)).filter((file) => file.endsWith('.yaml')).sort();
  const perFile = await Promise.all(
    files.map(async (file) => {
      const documents = loadAll(await readFile(new URL(file, EXAMPLES_DIR), 'utf8')) as Manifest[];
      return documents.map((manifest) => ({ file, manifest }));
    }),
  );
  return perFile.flat();
}
