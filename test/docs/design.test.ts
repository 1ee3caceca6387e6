import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { test } from 'node:test';
import { promisify } from 'node:util';

// The design lives in the repository: nothing points outside it, and every citation of
// docs/design.md names a section that exists there.
const ROOT = new URL('../../', import.meta.url);
const run = promisify(execFile);

async function trackedText(): Promise<Array<{ path: string; text: string }>> {
  const { stdout } = await run('git', ['ls-files', '-z'], { cwd: ROOT, maxBuffer: 64 * 1024 * 1024 });
  const paths = stdout.split('\0').filter((path) => /\.(ts|md|ya?ml|json|tpl|txt|lua)$/.test(path));
  return Promise.all(
    paths.map(async (path) => ({ path, text: await readFile(new URL(path, ROOT), 'utf8') })),
  );
}

test('no tracked file points at design notes outside the repository', async () => {
  // Spelled in pieces, so this file does not match itself.
  const outside = [
    ['..', 'shared'].join('/'),
    ['shared', 'design.md'].join('/'),
    ['spec', 'gpu-cloud-api.md'].join('/'),
  ];
  const found = (await trackedText()).flatMap(({ path, text }) =>
    outside.filter((needle) => text.includes(needle)).map((needle) => `${path}: ${needle}`),
  );
  assert.deepEqual(found, []);
});

test('every citation of docs/design.md names a section it has', async () => {
  const design = await readFile(new URL('docs/design.md', ROOT), 'utf8');
  const sections = new Set([...design.matchAll(/^#+ (§\d+(?:\.\d+)?)/gm)].map((match) => match[1]));
  assert.ok(sections.has('§4') && sections.has('§4.1'), `sections found: ${[...sections]}`);
  const cited = (await trackedText()).flatMap(({ path, text }) =>
    [...text.matchAll(/docs\/design\.md`? (§\d+(?:\.\d+)?)/g)].map((match) => ({
      path,
      section: match[1] ?? '',
    })),
  );
  assert.ok(cited.length >= 10, `${cited.length} citations read`);
  assert.deepEqual(
    cited.filter(({ section }) => !sections.has(section)),
    [],
  );
});
