import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { copyFile, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

// The README's first command, `npm ci`, as a new user runs it: with the system's npm on the system's Node
// (20+), not the Node 24 the project pins for everything else. Nothing it prints may look broken.
const ROOT = fileURLToPath(new URL('../', import.meta.url));
const pkg = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as {
  engines: { node: string };
  devEngines: { runtime: { name: string; version: string; onFail: string } };
  devDependencies: Record<string, string>;
};

/** The PATH without the pinned Node: node_modules/.bin and the directory of the Node running this test. */
const systemPath = (process.env.PATH ?? '')
  .split(delimiter)
  .filter((dir) => dir && !dir.includes('node_modules') && dir !== dirname(process.execPath))
  .join(delimiter);

function run(command: string, args: string[], cwd: string) {
  return new Promise<{ code: number; output: string }>((resolve) => {
    execFile(command, args, { cwd, env: { ...process.env, PATH: systemPath } }, (error, stdout, stderr) => {
      resolve({ code: error ? Number(error.code ?? 1) : 0, output: `${stdout}${stderr}` });
    });
  });
}

test('npm ci on the system Node prints no warning about engines', async (t) => {
  // The README asks for a system Node 20+ with npm: a machine without one cannot run its first command.
  const version = await run('node', ['--version'], ROOT);
  assert.equal(version.code, 0, `no system Node on the PATH: ${version.output}`);
  const [major = 0] = version.output.trim().slice(1).split('.').map(Number);
  assert.ok(major >= 20, `the system Node is ${version.output.trim()}; the README asks for 20+`);
  const scratch = await mkdtemp(join(tmpdir(), 'gpucloud-npm-ci-'));
  t.after(() => rm(scratch, { recursive: true, force: true }));
  for (const file of ['package.json', 'package-lock.json', '.npmrc']) {
    await copyFile(join(ROOT, file), join(scratch, file)).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'ENOENT' || file !== '.npmrc') throw error;
    });
  }
  const ci = await run('npm', ['ci', '--dry-run', '--no-audit', '--no-fund'], scratch);
  assert.equal(ci.code, 0, ci.output);
  assert.doesNotMatch(ci.output, /EBADENGINE|EBADDEVENGINES|npm warn/i);
  assert.match(ci.output, /added \d+ packages/);
});

test('the package states the Node it runs on; a checkout installs with Node 20+, as the README says', async () => {
  // The published package (and the image) run on Node 24: that is what `engines` tells its consumers,
  // and the Node the project pins for its own scripts is one of them.
  assert.equal(pkg.engines.node, '>=24 <25');
  assert.match(pkg.devDependencies.node ?? '', /^24\./);
  // Installing from a checkout runs npm on the system Node, so devEngines (which npm checks instead of
  // the root's engines) asks only for what the README asks.
  assert.deepEqual(pkg.devEngines.runtime, { name: 'node', version: '>=20', onFail: 'error' });
  const readme = await readFile(join(ROOT, 'README.md'), 'utf8');
  assert.match(readme, /\(Node 20\+ with npm,/);
});
