import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { GpuCloudClient } from '../../src/api/client.ts';
import { logs } from '../../src/console/commands.ts';
import { type RunningSimulator, startSimulator } from '../../src/sim/index.ts';

// `gpucloud logs -f` against the simulator: the cloud gives no cursor at the end of a log
// (docs/design.md §4.3), and following must still print each line once, and the new ones as they come.
const KEY = 'logs-test-key';
let sim: RunningSimulator;
let client: GpuCloudClient;

before(async () => {
  sim = await startSimulator({ apiKeys: [KEY], transitionMs: 20 });
  client = new GpuCloudClient({ baseUrl: sim.url, apiKey: KEY });
});
after(async () => {
  await client?.close();
  await sim?.stop();
});

async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

const status = async (id: string) => (await client.pods.get(id)).status;
/** Reads of pod `id`'s log the cloud answered so far. */
const logReads = (id: string) =>
  sim.calls.log().filter((call) => call.operation === 'pods.logs' && call.params.id === id).length;

test('logs -f prints each line once, then the lines the container prints later', async () => {
  const pod = await client.pods.create({
    name: 'follow-me',
    image: 'ubuntu:24.04',
    gpuType: 'NVIDIA L40S',
    gpuCount: 1,
  });
  await until('RUNNING', async () => (await status(pod.id)) === 'RUNNING');
  const printed: string[] = [];
  const stop = new AbortController();
  const following = logs(
    { kind: 'GpuPod', id: pod.id, status: {}, client },
    { follow: true, pollMs: 30, signal: stop.signal },
    (line) => printed.push(line.replace(/^\S+ /, '')),
  );
  const started = ['pulling image ubuntu:24.04', 'image pulled', 'container started'];
  await until('the container log', () => printed.length >= started.length);
  // Ten more reads of a log that has nothing new.
  let reads = logReads(pod.id);
  await until('ten more reads of the log', () => logReads(pod.id) >= reads + 10);
  assert.deepEqual(printed, started);

  // A pause and a resume start the container again: its lines come once more, once.
  await client.pods.pause(pod.id);
  await until('PAUSED', async () => (await status(pod.id)) === 'PAUSED');
  await client.pods.resume(pod.id);
  await until('the restarted container log', () => printed.length >= 2 * started.length);
  reads = logReads(pod.id);
  await until('ten more reads of the log', () => logReads(pod.id) >= reads + 10);
  stop.abort();
  await following;
  assert.deepEqual(printed, [...started, ...started]);
});

test('logs without -f prints the log once and returns; --limit stops it early', async () => {
  const pod = await client.pods.create({
    name: 'once',
    image: 'ubuntu:24.04',
    gpuType: 'NVIDIA L40S',
    gpuCount: 1,
  });
  await until('RUNNING', async () => (await status(pod.id)) === 'RUNNING');
  const target = { kind: 'GpuPod' as const, id: pod.id, status: {}, client };
  const all: string[] = [];
  await logs(target, { follow: false, pollMs: 30, signal: new AbortController().signal }, (line) =>
    all.push(line),
  );
  assert.equal(all.length, 3);
  const two: string[] = [];
  await logs(target, { follow: true, limit: 2, pollMs: 30, signal: new AbortController().signal }, (line) =>
    two.push(line),
  );
  assert.deepEqual(two, all.slice(0, 2));
});
