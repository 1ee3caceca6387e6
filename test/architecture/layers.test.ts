import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, matchesGlob, relative } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import {
  arrowsOf,
  circles,
  LAYERS,
  layerOf,
  MANAGED_ROOMS,
  roomOf,
  roomViolations,
  violations,
} from './layers.ts';

const SRC = fileURLToPath(new URL('../../src/', import.meta.url));

/** Every TypeScript file of src/managed, as `managed/…`, whether it imports anything or not. */
async function managedFiles(): Promise<string[]> {
  const entries = await readdir(join(SRC, 'managed'), { recursive: true, withFileTypes: true });
  return entries
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
    .map((entry) => relative(SRC, join(entry.parentPath, entry.name)));
}

describe('the layers of src/', () => {
  test('every import runs the way the rule allows', async () => {
    const arrows = await arrowsOf(SRC);
    assert.ok(arrows.length > 100, `read ${arrows.length} imports`);
    assert.deepEqual(violations(arrows), []);
  });

  test('every folder of src/ is a layer of the rule', async () => {
    const layers = new Set((await arrowsOf(SRC)).map((arrow) => layerOf(arrow.from)));
    for (const layer of layers) assert.ok(layer in LAYERS, `${layer} is in the rule`);
  });

  test('the generic layers know nothing of GPU clouds, and managed nothing of the kinds', () => {
    for (const [layer, target] of [
      ['kube', 'api'],
      ['controller', 'managed'],
      ['controller', 'api'],
      ['managed', 'resources'],
      ['api', 'kube'],
    ] as const) {
      assert.ok(!LAYERS[layer]?.includes(target), `${layer} may not import ${target}`);
    }
  });

  test('a deliberate violation is caught, and names the file and the two layers', () => {
    const arrows = [
      { from: 'managed/reconciler.ts', to: 'resources/gpu-pod/adapter.ts' },
      { from: 'resources/gpu-pod/adapter.ts', to: 'managed/external-kind.ts' },
      { from: 'kube/informer.ts', to: 'kube/object-store.ts' },
    ];
    assert.deepEqual(violations(arrows), [
      'managed/reconciler.ts imports resources/gpu-pod/adapter.ts: "managed" may not import "resources"',
    ]);
  });

  test('a file of a layer the rule does not know is caught', () => {
    assert.deepEqual(violations([{ from: 'misc/thing.ts', to: 'lib/delay.ts' }]), [
      'misc/thing.ts: its layer "misc" is not in the rule',
    ]);
  });

  test('no import circle among the files of src/, counting type-only imports, re-exports and import()', async () => {
    assert.deepEqual(circles(await arrowsOf(SRC)), []);
  });

  test('a circle is caught once, whichever way round it is read, and named file by file', () => {
    const arrows = [
      { from: 'kube/connection.ts', to: 'kube/kubeconfig.ts' },
      { from: 'kube/kubeconfig.ts', to: 'kube/connection.ts' },
      { from: 'kube/client.ts', to: 'kube/connection.ts' },
      { from: 'kube/connection.ts', to: 'kube/in-cluster.ts' },
      { from: 'kube/in-cluster.ts', to: 'kube/connection.ts' },
      { from: 'managed/a.ts', to: 'managed/b.ts' },
      { from: 'managed/b.ts', to: 'managed/c.ts' },
      { from: 'managed/c.ts', to: 'managed/a.ts' },
      { from: 'managed/c.ts', to: 'managed/b.ts' },
      { from: 'lib/self.ts', to: 'lib/self.ts' },
      { from: 'lib/x.ts', to: 'lib/y.ts' },
    ];
    assert.deepEqual(circles(arrows), [
      'kube/connection.ts → kube/in-cluster.ts → kube/connection.ts (in one tangle with kube/kubeconfig.ts)',
      'lib/self.ts → lib/self.ts',
      'managed/a.ts → managed/b.ts → managed/c.ts → managed/a.ts',
    ]);
  });

  test('every kind of import is read: type-only, inline type, re-export, bare, dynamic, multi-line', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'layers-'));
    try {
      await mkdir(join(dir, 'kube'));
      await writeFile(
        join(dir, 'kube', 'all.ts'),
        [
          "import type { A } from './type-only.ts';",
          "import { type B, c } from './inline-type.ts';",
          "export { d } from './re-export.ts';",
          "export * from '../lib/star.ts';",
          "export type { E } from './type-re-export.ts';",
          "import './bare.ts';",
          'import {',
          '  f,',
          '  g,',
          "} from './multi-line.ts';",
          "type H = import('./type-query.ts').H;",
          "const loaded = await import('./dynamic.ts');",
          "import { z } from 'zod';",
        ].join('\n'),
      );
      const targets = (await arrowsOf(dir)).map((arrow) => arrow.to).sort();
      assert.deepEqual(targets, [
        'kube/bare.ts',
        'kube/dynamic.ts',
        'kube/inline-type.ts',
        'kube/multi-line.ts',
        'kube/re-export.ts',
        'kube/type-only.ts',
        'kube/type-query.ts',
        'kube/type-re-export.ts',
        'lib/star.ts',
      ]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('the rooms of src/managed', () => {
  test('every import between two files of src/managed runs the way the rooms allow', async () => {
    const arrows = await arrowsOf(SRC);
    const inside = arrows.filter(({ from, to }) => layerOf(from) === 'managed' && layerOf(to) === 'managed');
    assert.ok(inside.length > 100, `read ${inside.length} imports inside src/managed`);
    assert.deepEqual(roomViolations(arrows), []);
  });

  test('every file of src/managed sits in a room of the rule', async () => {
    const files = await managedFiles();
    assert.ok(files.length > 40, `read ${files.length} files of src/managed`);
    for (const file of files) assert.ok(roomOf(file) in MANAGED_ROOMS, `${file} is in a room of the rule`);
  });

  test('core imports no room, and no room but the reconciler reaches every other', () => {
    assert.deepEqual(MANAGED_ROOMS.core, []);
    for (const [room, allowed] of Object.entries(MANAGED_ROOMS)) {
      assert.ok(!allowed.includes('reconciler'), `${room} may not import the reconciler`);
      assert.ok(!allowed.includes(room), `${room} does not list itself`);
    }
  });

  test('reporting knows no feature: pause, placement, recovery and late initialisation contribute to it', () => {
    for (const feature of ['creation', 'identity', 'lifecycle'])
      assert.ok(!MANAGED_ROOMS.reporting?.includes(feature), `reporting may not import ${feature}`);
  });

  test('a feature imported by core is caught, and so is a file in no room', () => {
    const arrows = [
      { from: 'managed/core/writer.ts', to: 'managed/lifecycle/operator-pause.ts' },
      { from: 'managed/lifecycle/operator-pause.ts', to: 'managed/core/writer.ts' },
      { from: 'managed/loose.ts', to: 'managed/core/writer.ts' },
      { from: 'managed/core/writer.ts', to: 'kube/client.ts' },
    ];
    assert.deepEqual(roomViolations(arrows), [
      'managed/core/writer.ts imports managed/lifecycle/operator-pause.ts: "core" may not import "lifecycle"',
      'managed/loose.ts: its room "managed/loose.ts" is not in the rule',
    ]);
  });

  test('mutation testing mutates every file of every room', async () => {
    const config = z
      .object({ mutate: z.array(z.string()) })
      .parse(JSON.parse(await readFile(new URL('../../stryker.config.json', import.meta.url), 'utf8')));
    const files = await managedFiles();
    assert.ok(files.length > 40, `read ${files.length} files of src/managed`);
    for (const file of files)
      assert.ok(
        config.mutate.some((glob) => matchesGlob(`src/${file}`, glob)),
        `${file} is in stryker.config.json's mutate`,
      );
  });
});
