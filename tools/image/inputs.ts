// What the image is made of, as one hash: a warm run whose inputs have not changed reuses the archive.
import { createHash } from 'node:crypto';
import { globSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { REPO_ROOT } from './settings.ts';

/** The files the build reads: the Dockerfile and its ignore file, and everything the Dockerfile copies. */
const INPUT_PATTERNS = [
  'Dockerfile',
  '.dockerignore',
  'package.json',
  'package-lock.json',
  'tsconfig*.json',
  'src/**',
];

export function inputFiles(root = REPO_ROOT): string[] {
  return globSync(INPUT_PATTERNS, { cwd: root, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name).slice(root.length + 1))
    .sort();
}

/** A hash of the inputs' paths and contents and of `extra` (the base's recipe and the build's settings). */
export async function inputsHash(extra: unknown, root = REPO_ROOT): Promise<string> {
  const hash = createHash('sha256').update(JSON.stringify(extra));
  for (const file of inputFiles(root)) {
    hash.update(`\0${file}\0`);
    hash.update(await readFile(join(root, file)));
  }
  return hash.digest('hex').slice(0, 16);
}
