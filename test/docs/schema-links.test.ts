import assert from 'node:assert/strict';
import { access } from 'node:fs/promises';
import { test } from 'node:test';
import { kinds } from '../../src/resources/kinds.ts';
import { buildCrd } from '../../tools/crd/crd.ts';

// `kubectl explain` shows a schema's descriptions to users who have only the cluster: a document a
// description sends them to must be one the repository has.
const ROOT = new URL('../../', import.meta.url);

function descriptions(node: unknown, found: string[] = []): string[] {
  if (Array.isArray(node)) {
    for (const item of node) descriptions(item, found);
  } else if (node !== null && typeof node === 'object') {
    for (const [key, value] of Object.entries(node)) {
      if (key === 'description' && typeof value === 'string') found.push(value);
      else descriptions(value, found);
    }
  }
  return found;
}

test('every docs/ path a CRD schema description names exists in the repository', async () => {
  const cited = kinds.flatMap((kind) =>
    descriptions(buildCrd(kind)).flatMap((text) =>
      [...text.matchAll(/\bdocs\/[\w./-]*\w/g)].map((match) => ({ kind: kind.kind, path: match[0] })),
    ),
  );
  assert.ok(cited.length > 0, 'the descriptions cite documents (writeConnectionSecretToRef does)');
  const missing = [];
  for (const each of cited) {
    try {
      await access(new URL(each.path, ROOT));
    } catch {
      missing.push(each);
    }
  }
  assert.deepEqual(missing, []);
});
