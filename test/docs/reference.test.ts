import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { test } from 'node:test';
import { referenceFiles } from '../../tools/generate.ts';

const ROOT = new URL('../../', import.meta.url);

test('the committed reference pages are what `npm run gen` writes', async () => {
  for (const [path, content] of await referenceFiles()) {
    assert.equal(await readFile(new URL(path, ROOT), 'utf8'), content, `${path} drifted: run npm run gen`);
  }
});

test('the CRD reference documents every spec field and its admission rules', async () => {
  const page = (await referenceFiles()).get('docs/crd-reference.md') ?? '';
  for (const field of [
    '`spec.gpuCount`',
    '`spec.paused`',
    '`spec.deletionPolicy`',
    '`spec.workers`',
    '`status.conditions`',
  ]) {
    assert.ok(page.includes(field), `${field} documented`);
  }
  assert.match(page, /gpuCount must be a power of 2/);
  assert.match(page, /maxPrice is only valid for spot pods/);
});
