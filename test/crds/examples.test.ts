import assert from 'node:assert/strict';
import { test } from 'node:test';
import { API_VERSION, kinds } from '../../src/resources/kinds.ts';
import { readExamples } from './examples.ts';

// The apiserver suite proves the examples pass admission; this checks them against the zod schemas
// the operator parses specs with, so the two cannot disagree on an example.

test('every example of a gpucloud kind parses with its spec schema', async () => {
  const examples = (await readExamples()).filter(({ manifest }) => manifest.apiVersion === API_VERSION);
  for (const { file, manifest } of examples) {
    const kind = kinds.find((candidate) => candidate.kind === manifest.kind);
    assert.ok(kind, `${file}: unknown kind ${manifest.kind}`);
    const parsed = kind.spec.safeParse(manifest.spec);
    assert.ok(parsed.success, `${file}: ${parsed.error?.message}`);
  }
});

test('every kind has an example', async () => {
  const shown = new Set((await readExamples()).map(({ manifest }) => manifest.kind));
  assert.deepEqual(
    kinds.map((kind) => kind.kind).filter((kind) => !shown.has(kind)),
    [],
  );
});
