import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { describe, it, type TestContext } from 'node:test';
import { fileURLToPath } from 'node:url';

const CLI = fileURLToPath(new URL('../../src/cli/sim.ts', import.meta.url));

/** Starts the CLI; killed when the test ends if it is still running. */
function run(t: TestContext, args: string[]): ChildProcess & { output: () => string; errors: () => string } {
  const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  t.after(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  return Object.assign(child, { output: () => stdout, errors: () => stderr });
}

async function urlLine(child: ChildProcess & { output: () => string }): Promise<string> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const url = /http:\/\/127\.0\.0\.1:\d+/.exec(child.output())?.[0];
    if (url !== undefined) return url;
    assert.ok(Date.now() < deadline && child.exitCode === null, 'the CLI printed its URL');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('npm run sim', () => {
  it('prints one line with its URL, serves the API, and exits cleanly on SIGTERM', async (t) => {
    const child = run(t, [
      '--port',
      '0',
      '--api-key',
      'cli-key',
      '--api-key',
      'cli-key-2',
      '--transition-ms',
      '0',
    ]);
    const url = await urlLine(child);
    const response = await fetch(`${url}/v2/pods`, {
      method: 'POST',
      headers: { 'x-api-key': 'cli-key-2' },
      body: JSON.stringify({ name: 'cli', image: 'img', gpuType: 'NVIDIA L40S', gpuCount: 1 }),
    });
    const created = (await response.json()) as { code: number; data: { status: string } };
    assert.equal(created.code, 10000);
    assert.equal(created.data.status, 'RUNNING', '--transition-ms 0 makes steps instant');
    assert.equal(
      child
        .output()
        .split('\n')
        .filter((line) => line.includes(url)).length,
      1,
    );
    const exited = once(child, 'exit');
    child.kill('SIGTERM');
    const [code] = await exited;
    assert.equal(code, 0);
  });

  it('refuses bad flags with a clear message and exit code 2', async (t) => {
    for (const args of [['--port', 'eighty', '--api-key', 'k'], ['--api-key', 'k', '--frobnicate'], []]) {
      const child = run(t, args);
      const [code] = await once(child, 'exit');
      assert.equal(code, 2, `args ${args.join(' ')}`);
      assert.match(child.errors(), /^sim: .+\n[\s\S]*usage:/);
    }
  });
});
