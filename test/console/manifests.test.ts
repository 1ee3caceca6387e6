import assert from 'node:assert/strict';
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { readManifests } from '../../src/console/manifests.ts';

// How `plan -f` reads manifests, as `kubectl apply -f` does: files of several YAML documents, JSON,
// directories (their manifest files in name order, not their subdirectories), Lists, standard input.

const noStdin = async () => assert.fail('standard input is read only for -f -');

test('a file of several documents gives each, empty ones skipped, named file#n; a List gives its items', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'manifests-'));
  const file = join(dir, 'all.yaml');
  await writeFile(
    file,
    'kind: GpuPod\nmetadata: {name: a}\n---\n---\nkind: List\nitems:\n  - {kind: GpuVm, metadata: {name: b}}\n  - {kind: GpuVm, metadata: {name: c}}\n',
  );
  const read = await readManifests([file], noStdin);
  assert.deepEqual(
    read.map(({ source, object }) => [
      source.slice(dir.length + 1),
      (object as { metadata: { name: string } }).metadata.name,
    ]),
    [
      ['all.yaml#1', 'a'],
      ['all.yaml#2[0]', 'b'],
      ['all.yaml#2[1]', 'c'],
    ],
  );
});

test('a directory gives its .yaml, .yml and .json files in name order, not other files nor subdirectories', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'manifests-'));
  await writeFile(join(dir, 'b.yml'), 'kind: B\n');
  await writeFile(join(dir, 'a.json'), '{"kind": "A"}');
  await writeFile(join(dir, 'c.yaml'), 'kind: C\n');
  await writeFile(join(dir, 'notes.txt'), 'kind: Nope\n');
  await mkdir(join(dir, 'sub'));
  await writeFile(join(dir, 'sub', 'd.yaml'), 'kind: D\n');
  const read = await readManifests([dir], noStdin);
  assert.deepEqual(
    read.map(({ object }) => (object as { kind: string }).kind),
    ['A', 'B', 'C'],
  );
});

test('"-" reads standard input; what cannot be read or parsed is a usage error naming it', async () => {
  const read = await readManifests(['-'], async () => 'kind: GpuPod\n');
  assert.deepEqual(read, [{ source: '-', object: { kind: 'GpuPod' } }]);
  await assert.rejects(
    readManifests(['/nonexistent/x.yaml'], noStdin),
    (error: Error & { exitCode?: number }) => {
      assert.equal(error.exitCode, 2);
      assert.match(error.message, /^cannot read \/nonexistent\/x\.yaml \(ENOENT\)/);
      return true;
    },
  );
  await assert.rejects(
    readManifests(['-'], async () => 'kind: [unclosed\n'),
    /^CommandError: - is not YAML or JSON: /,
  );
});
