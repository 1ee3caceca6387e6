// The layers of src/ and the one rule between them: a file imports only from its own layer and the
// layers its entry names. Read from the code's own import lines, so the rule cannot drift from it.
import { readdir, readFile } from 'node:fs/promises';
import { dirname, join, normalize, relative } from 'node:path';

/** Each layer (a folder, or a file, under src/) and the layers it may import from. */
export const LAYERS: Readonly<Record<string, readonly string[]>> = {
  lib: [],
  'undici.ts': [],
  'version.ts': [],
  api: ['lib', 'undici.ts', 'version.ts'],
  kube: ['lib', 'undici.ts'],
  controller: ['kube', 'lib'],
  managed: ['controller', 'kube', 'api', 'lib'],
  resources: ['managed', 'kube', 'api', 'lib'],
  sim: ['api', 'lib', 'undici.ts'],
  operator: ['resources', 'managed', 'controller', 'kube', 'api', 'lib', 'undici.ts', 'version.ts'],
  local: ['operator', 'sim', 'resources', 'managed', 'controller', 'kube', 'api', 'lib', 'undici.ts'],
  console: ['resources', 'kube', 'api', 'lib'],
  cli: [
    'console',
    'local',
    'operator',
    'sim',
    'resources',
    'managed',
    'controller',
    'kube',
    'api',
    'lib',
    'version.ts',
  ],
};

/** One import line: `from` imports `to`, both paths relative to src/. */
export interface Arrow {
  from: string;
  to: string;
}

export function layerOf(path: string): string {
  return path.split('/')[0] ?? path;
}

/** The arrows that run against the rule, each with what it breaks. */
export function violations(arrows: readonly Arrow[], layers = LAYERS): string[] {
  const found: string[] = [];
  for (const { from, to } of arrows) {
    const source = layerOf(from);
    const target = layerOf(to);
    if (source === target) continue;
    const allowed = layers[source];
    if (allowed === undefined) found.push(`${from}: its layer "${source}" is not in the rule`);
    else if (!allowed.includes(target))
      found.push(`${from} imports ${to}: "${source}" may not import "${target}"`);
  }
  return found;
}

const IMPORT =
  /(?:^|\s)(?:import|export)\s[^'"]*?from\s*['"](\.{1,2}\/[^'"]+)['"]|import\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/g;

/** Every relative import of every TypeScript file under `srcDir`. */
export async function arrowsOf(srcDir: string): Promise<Arrow[]> {
  const arrows: Arrow[] = [];
  const entries = await readdir(srcDir, { recursive: true, withFileTypes: true });
  for (const entry of entries) {
    if (!entry.isFile() || !entry.name.endsWith('.ts')) continue;
    const file = join(entry.parentPath, entry.name);
    const from = relative(srcDir, file);
    for (const match of (await readFile(file, 'utf8')).matchAll(IMPORT)) {
      const specifier = match[1] ?? match[2];
      if (specifier) arrows.push({ from, to: normalize(join(dirname(from), specifier)) });
    }
  }
  return arrows;
}
