import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { test } from 'node:test';
import { CATEGORY } from '../../src/resources/common/kind.ts';
import { kinds } from '../../src/resources/kinds.ts';
import { buildCrd } from '../../tools/crd/crd.ts';

// What the README and `npm run local` say `kubectl get gpucloud` lists is what the CRDs put in the
// category: kubectl lists every kind whose CRD names it, namespaced or cluster-scoped.
const ROOT = new URL('../../', import.meta.url);

const inCategory = kinds
  .filter((kind) => buildCrd(kind).spec.names.categories?.includes(CATEGORY))
  .map((kind) => kind.kind)
  .sort();

/** The kinds named in the comment of each line that runs `get gpucloud`. */
function claims(text: string): string[][] {
  const names = kinds.map((kind) => kind.kind);
  return [...text.matchAll(/get gpucloud\s+#([^\n]*)/g)].map((match) =>
    names.filter((name) => new RegExp(`\\b${name}\\b`).test(match[1] ?? '')).sort(),
  );
}

test('the gpucloud category holds every kind, ProviderConfig included', () => {
  assert.deepEqual(inCategory, kinds.map((kind) => kind.kind).sort());
});

for (const path of ['README.md', 'src/cli/local.ts']) {
  test(`${path} says \`kubectl get gpucloud\` lists exactly the kinds of the category`, async () => {
    const said = claims(await readFile(new URL(path, ROOT), 'utf8'));
    assert.ok(said.length > 0, `${path} shows \`get gpucloud\` with a comment`);
    for (const kindsSaid of said) assert.deepEqual(kindsSaid, inCategory);
  });
}
