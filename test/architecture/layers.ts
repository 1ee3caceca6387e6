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
  resources: ['managed', 'controller', 'kube', 'api', 'lib'],
  sim: ['api', 'lib', 'undici.ts'],
  // What the two APIs served on a user's behalf share: SubjectAccessReviews, query reading, failure answers.
  serving: ['kube', 'api', 'lib'],
  'tenant-api': ['serving', 'resources', 'managed', 'controller', 'kube', 'api', 'lib'],
  'virtual-node': ['serving', 'resources', 'managed', 'controller', 'kube', 'api', 'lib', 'version.ts'],
  operator: [
    'virtual-node',
    'tenant-api',
    'resources',
    'managed',
    'controller',
    'kube',
    'api',
    'lib',
    'undici.ts',
    'version.ts',
  ],
  local: [
    'operator',
    'tenant-api',
    'sim',
    'resources',
    'managed',
    'controller',
    'kube',
    'api',
    'lib',
    'undici.ts',
  ],
  console: ['tenant-api', 'resources', 'kube', 'api', 'lib'],
  cli: [
    'console',
    'tenant-api',
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

/**
 * The rooms of src/managed (a folder each, by concern) and the rooms each may import from. The contract and
 * the plumbing every part uses are `core`, which imports no room; a feature imports core and the rooms below
 * it; `reporting` imports no feature (each adds its part of the status through core's `StatusContributor`);
 * `reconciler` composes them all and nothing imports it.
 */
export const MANAGED_ROOMS: Readonly<Record<string, readonly string[]>> = {
  core: [],
  'cloud-cache': ['core'],
  secrets: ['core'],
  creation: ['core', 'cloud-cache'],
  accounts: ['core', 'cloud-cache', 'creation'],
  reporting: ['core', 'accounts', 'secrets'],
  identity: ['core', 'accounts', 'creation'],
  lifecycle: ['core', 'accounts', 'creation', 'identity'],
  reconciler: [
    'core',
    'cloud-cache',
    'secrets',
    'creation',
    'accounts',
    'identity',
    'lifecycle',
    'reporting',
  ],
};

export function layerOf(path: string): string {
  return path.split('/')[0] ?? path;
}

/** The room of a file of src/managed (`managed/<room>/<file>`), or the file itself when it sits in no room. */
export function roomOf(path: string): string {
  const [, room, ...rest] = path.split('/');
  return rest.length > 0 ? (room as string) : path;
}

/** The arrows that run against the rule, each with what it breaks. */
export function violations(
  arrows: readonly Arrow[],
  layers = LAYERS,
  partOf: (path: string) => string = layerOf,
  part = 'layer',
): string[] {
  const found: string[] = [];
  for (const { from, to } of arrows) {
    const source = partOf(from);
    const target = partOf(to);
    if (source === target) continue;
    const allowed = layers[source];
    if (allowed === undefined) found.push(`${from}: its ${part} "${source}" is not in the rule`);
    else if (!allowed.includes(target))
      found.push(`${from} imports ${to}: "${source}" may not import "${target}"`);
  }
  return found;
}

/** The arrows between files of src/managed that run against the rule of its rooms. */
export function roomViolations(arrows: readonly Arrow[], rooms = MANAGED_ROOMS): string[] {
  const inside = arrows.filter(({ from, to }) => layerOf(from) === 'managed' && layerOf(to) === 'managed');
  return violations(inside, rooms, roomOf, 'room');
}

// Every way one file can need another, type-only ones included: `import … from`, `import type`, `export … from`
// (re-exports), a bare `import './x.ts'`, and an `import('./x.ts')` expression or type.
const IMPORT =
  /(?:^|\s)(?:import|export)\s[^'"]*?from\s*['"](\.{1,2}\/[^'"]+)['"]|(?:^|\s)import\s*['"](\.{1,2}\/[^'"]+)['"]|import\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/g;

/** Every relative import of every TypeScript file under `srcDir`. */
export async function arrowsOf(srcDir: string): Promise<Arrow[]> {
  const arrows: Arrow[] = [];
  const entries = await readdir(srcDir, { recursive: true, withFileTypes: true });
  for (const entry of entries) {
    if (!entry.isFile() || !entry.name.endsWith('.ts')) continue;
    const file = join(entry.parentPath, entry.name);
    const from = relative(srcDir, file);
    for (const match of (await readFile(file, 'utf8')).matchAll(IMPORT)) {
      const specifier = match[1] ?? match[2] ?? match[3];
      if (specifier) arrows.push({ from, to: normalize(join(dirname(from), specifier)) });
    }
  }
  return arrows;
}

/**
 * The import circles among the files of `arrows`: one line per set of files that all reach each other, so a
 * tangle is reported once however many ways round it there are. Each line walks one circle back to its first
 * file and, when the set holds more, names the rest.
 */
export function circles(arrows: readonly Arrow[]): string[] {
  const next = new Map<string, string[]>();
  for (const { from, to } of arrows) {
    const targets = next.get(from) ?? [];
    if (!targets.includes(to)) targets.push(to);
    next.set(from, targets);
    if (!next.has(to)) next.set(to, []);
  }
  for (const targets of next.values()) targets.sort();
  return stronglyConnected(next)
    .filter((group) => group.length > 1 || (next.get(group[0] as string) ?? []).includes(group[0] as string))
    .map((group) => {
      const circle = circleThrough(group, next);
      const rest = group.filter((file) => !circle.includes(file));
      return circle.join(' → ') + (rest.length > 0 ? ` (in one tangle with ${rest.join(', ')})` : '');
    })
    .sort();
}

/** Tarjan's strongly connected components of the graph `next`, each sorted by name. */
function stronglyConnected(next: ReadonlyMap<string, readonly string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const groups: string[][] = [];
  const visit = (node: string): void => {
    index.set(node, index.size);
    low.set(node, index.get(node) as number);
    stack.push(node);
    onStack.add(node);
    for (const target of next.get(node) ?? []) {
      if (!index.has(target)) {
        visit(target);
        low.set(node, Math.min(low.get(node) as number, low.get(target) as number));
      } else if (onStack.has(target)) {
        low.set(node, Math.min(low.get(node) as number, index.get(target) as number));
      }
    }
    if (low.get(node) !== index.get(node)) return;
    const group: string[] = [];
    for (let member = stack.pop(); member !== undefined; member = stack.pop()) {
      onStack.delete(member);
      group.push(member);
      if (member === node) break;
    }
    groups.push(group.sort());
  };
  for (const node of [...next.keys()].sort()) if (!index.has(node)) visit(node);
  return groups;
}

/** A shortest way from the group's first file round to itself, staying inside the group. */
function circleThrough(group: readonly string[], next: ReadonlyMap<string, readonly string[]>): string[] {
  const start = group[0] as string;
  const members = new Set(group);
  const cameFrom = new Map<string, string>();
  const queue = [start];
  for (let at = queue.shift(); at !== undefined; at = queue.shift()) {
    for (const target of next.get(at) ?? []) {
      if (!members.has(target)) continue;
      if (target === start) {
        const path = [at];
        while (path[0] !== start) path.unshift(cameFrom.get(path[0] as string) as string);
        return [...path, start];
      }
      if (cameFrom.has(target)) continue;
      cameFrom.set(target, at);
      queue.push(target);
    }
  }
  return [...group, start];
}
