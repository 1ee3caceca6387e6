import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { type RunningSimulator, startSimulator } from '../../src/sim/index.ts';

// The typed client as another project meets it: the packed tarball installed into a scratch project,
// imported as `gpucloud-operator/client` from compiled JavaScript (Node does not strip types inside
// node_modules), its declarations type-checked, and nothing of the operator reachable.
const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const KEY = 'library-test-key';
let scratch: string;
let sim: RunningSimulator;

const consumer = `
import { GpuCloudClient, CloudApiError } from 'gpucloud-operator/client';
const [url, key] = process.argv.slice(2);
const client = new GpuCloudClient({ baseUrl: url, apiKey: key });
const pod = await client.pods.create({ name: 'from-a-library', image: 'ubuntu:24.04', gpuType: 'NVIDIA L40S', gpuCount: 1 });
let notFound = '';
try {
  await client.pods.get('999999999');
} catch (error) {
  notFound = error instanceof CloudApiError ? error.kind : 'other';
}
const types = await client.vms.types();
await client.close();
console.log(JSON.stringify({ id: pod.id, status: pod.status, notFound, vmTypes: types.length }));
`;

const typed = `
import { GpuCloudClient, type PodCreateRequest, type Vm } from 'gpucloud-operator/client';
const request: PodCreateRequest = { name: 'x', image: 'ubuntu:24.04', gpuType: 'NVIDIA L40S', gpuCount: 1 };
export async function first(client: GpuCloudClient): Promise<Vm | undefined> {
  await client.pods.create(request);
  for await (const vm of client.vms.listAll()) return vm;
  return undefined;
}
`;

describe('the client as a library, from the packed package', () => {
  before(async () => {
    scratch = await mkdtemp(join(tmpdir(), 'gpucloud-client-'));
    const { stdout } = await run(NPM, ['pack', '--pack-destination', scratch, '--silent'], {
      cwd: ROOT,
      maxBuffer: 16 * 1024 * 1024,
    });
    const tarball = join(scratch, stdout.trim().split('\n').at(-1) ?? '');
    await writeFile(
      join(scratch, 'package.json'),
      JSON.stringify({ name: 'scratch', private: true, type: 'module' }),
    );
    await run(NPM, ['install', '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts', tarball], {
      cwd: scratch,
      maxBuffer: 16 * 1024 * 1024,
    });
    await writeFile(join(scratch, 'consumer.mjs'), consumer);
    await writeFile(join(scratch, 'typed.ts'), typed);
    sim = await startSimulator({ apiKeys: [KEY], transitionMs: 0 });
  });
  after(async () => {
    await sim?.stop();
    await rm(scratch, { recursive: true, force: true });
  });

  test('the tarball holds compiled JavaScript and declarations, not the sources or tests', async () => {
    const installed = join(scratch, 'node_modules', 'gpucloud-operator');
    const top = await readdir(installed);
    assert.ok(!top.includes('src') && !top.includes('test'), `packed: ${top.join(', ')}`);
    const api = await readdir(join(installed, 'dist', 'api'));
    assert.ok(api.includes('index.js') && api.includes('index.d.ts'));
    assert.ok(!api.some((file) => file.endsWith('.map')));
  });

  test('a plain JavaScript project calls the simulator through it, errors typed', async () => {
    const { stdout } = await run(process.execPath, ['consumer.mjs', sim.url, KEY], { cwd: scratch });
    const answer = JSON.parse(stdout) as Record<string, unknown>;
    assert.match(String(answer.id), /^\d+$/);
    assert.equal(answer.notFound, 'notFound');
    assert.ok(Number(answer.vmTypes) > 0);
  });

  test('its declarations type-check in a TypeScript project', async () => {
    const tsc = join(ROOT, 'node_modules', '.bin', 'tsc');
    await run(
      tsc,
      [
        '--noEmit',
        '--strict',
        '--module',
        'nodenext',
        '--moduleResolution',
        'nodenext',
        '--skipLibCheck',
        'false',
        'typed.ts',
      ],
      {
        cwd: scratch,
      },
    );
  });

  test('only the client is exported: the operator inside stays private', async () => {
    await writeFile(
      join(scratch, 'reach.mjs'),
      "await import('gpucloud-operator/dist/managed/reconciler.js');",
    );
    await assert.rejects(
      run(process.execPath, ['reach.mjs'], { cwd: scratch }),
      /ERR_PACKAGE_PATH_NOT_EXPORTED/,
    );
  });
});
