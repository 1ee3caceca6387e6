import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiCode } from '../../src/api/codes.ts';
import type { GpuSpec, PodCreateRequest } from '../../src/api/schemas/index.ts';
import {
  collect,
  itExercisedEveryOperation,
  MISSING_ID,
  RETENTION_MS,
  rejectsLocally,
  rejectsWithCode,
  STEP_MS,
  useContract,
} from './harness.ts';

const env = useContract();

/** An available on-demand machine from the GPU search, for pod requests. */
async function anOffer(): Promise<GpuSpec> {
  const { items } = await env.client.pods.searchGpus({ isSpot: false });
  const offer = items.find((item) =>
    item.gpuCountOptions.some((option) => option.available && option.gpuCount === 1),
  );
  assert.ok(offer, 'the search offers an available single-GPU machine');
  return offer;
}

async function newPod(name: string, overrides: Partial<PodCreateRequest> = {}) {
  const offer = await anOffer();
  return env.client.pods.create({
    name,
    image: 'pytorch/pytorch:2.3',
    gpuType: offer.gpuType,
    gpuCount: 1,
    regions: [offer.region],
    ...overrides,
  });
}

async function runningPod(name: string) {
  const pod = await newPod(name);
  env.step();
  assert.equal((await env.client.pods.get(pod.id)).status, 'RUNNING');
  return pod;
}

describe('v2 pods against the simulator', () => {
  it('searchGpus: machines with GPU count options and prices, paged', async () => {
    const all = await collect(env.client.pods.searchGpusAll());
    assert.ok(all.length > 1);
    const first = await env.client.pods.searchGpus({ page: 1, size: 1 });
    assert.deepEqual([first.page, first.size, first.total, first.pages], [1, 1, all.length, all.length]);
    assert.deepEqual(first.items, all.slice(0, 1));
    assert.deepEqual(await collect(env.client.pods.searchGpusAll({}, { pageSize: 2 })), all);

    const offer = await anOffer();
    const filtered = await env.client.pods.searchGpus({ gpuTypes: [offer.gpuType], regions: [offer.region] });
    assert.ok(filtered.items.length > 0);
    assert.ok(filtered.items.every((item) => item.gpuType === offer.gpuType && item.region === offer.region));
    const option = offer.gpuCountOptions[0];
    assert.ok(option);
    assert.match(option.price.gpuPricePerHour, /^\d+(\.\d+)?$/);
    assert.ok(option.containerVolume.minInGb <= option.containerVolume.maxInGb);
  });

  it('create answers the pod INITIALIZING with POD_ID added to its environment; one step later RUNNING', async () => {
    const pod = await newPod('notebook', {
      environmentVars: [{ key: 'MODE', value: 'train' }],
      expose: [{ port: 8888, protocol: 'HTTP' }],
    });
    assert.match(pod.id, /^\d+$/);
    assert.equal(pod.status, 'INITIALIZING');
    assert.equal(pod.name, 'notebook');
    assert.deepEqual(
      pod.environmentVars.find((env) => env.key === 'POD_ID'),
      { key: 'POD_ID', value: pod.id },
    );
    assert.ok(pod.environmentVars.some((env) => env.key === 'MODE' && env.value === 'train'));
    assert.equal(pod.expose[0]?.port, 8888);

    const got = await env.client.pods.get(pod.id);
    assert.equal(got.createdAt, pod.createdAt);
    assert.equal(typeof got.nodePool, 'string', 'get adds nodePool');
    env.step();
    assert.equal((await env.client.pods.get(pod.id)).status, 'RUNNING');
  });

  it('list filters by status and region', async () => {
    const pod = await runningPod('listed');
    const running = await env.client.pods.list({ statusList: ['RUNNING'] });
    assert.ok(running.some((item) => item.id === pod.id));
    assert.ok(running.every((item) => item.status === 'RUNNING'));
    const paused = await env.client.pods.list({ statusList: ['PAUSED', 'TERMINATED'] });
    assert.ok(paused.every((item) => item.id !== pod.id));
    const elsewhere = await env.client.pods.list({ regionList: ['nowhere-1'] });
    assert.deepEqual(elsewhere, []);
    const everything = await env.client.pods.list();
    assert.ok(everything.some((item) => item.id === pod.id && item.region === pod.region));
  });

  it('pause: RUNNING → PAUSING → PAUSED; resume: PAUSED → INITIALIZING → RUNNING', async () => {
    const pod = await runningPod('pausable');
    await env.client.pods.pause(pod.id);
    assert.equal((await env.client.pods.get(pod.id)).status, 'PAUSING');
    env.step();
    assert.equal((await env.client.pods.get(pod.id)).status, 'PAUSED');
    await env.client.pods.resume(pod.id);
    assert.equal((await env.client.pods.get(pod.id)).status, 'INITIALIZING');
    env.step();
    assert.equal((await env.client.pods.get(pod.id)).status, 'RUNNING');
  });

  it('pause and resume in the wrong state are refused with 12001', async () => {
    const pod = await newPod('early');
    const wrongState = { code: ApiCode.ResourceStatusInvalid, kind: 'conflict' } as const;
    await rejectsWithCode(env.client.pods.pause(pod.id), wrongState);
    await rejectsWithCode(env.client.pods.resume(pod.id), wrongState);
    env.step();
    await rejectsWithCode(env.client.pods.resume(pod.id), wrongState);
    await env.client.pods.pause(pod.id);
    await rejectsWithCode(env.client.pods.pause(pod.id), wrongState);
  });

  it('logs: container lines by default, system lines on request, paged by nextCursor', async () => {
    const pod = await runningPod('chatty');
    const container = await env.client.pods.logs(pod.id);
    assert.ok(container.items.some((line) => line.content === 'container started'));
    assert.equal(container.nextCursor, null);
    const system = await env.client.pods.logs(pod.id, { type: 'SYSTEM' });
    assert.ok(system.items.some((line) => line.content.includes('RUNNING')));
    assert.ok(!Number.isNaN(Date.parse(system.items[0]?.timestamp ?? '')));

    const first = await env.client.pods.logs(pod.id, { limit: 1 });
    assert.equal(first.items.length, 1);
    assert.equal(typeof first.nextCursor, 'string');
    const paged = await collect(env.client.pods.logsAll(pod.id, { limit: 1 }));
    assert.deepEqual(paged, container.items);

    const matching = await env.client.pods.logs(pod.id, { keyword: 'container started' });
    assert.deepEqual(
      matching.items.map((line) => line.content),
      ['container started'],
    );
  });

  it('runtime counts billed running time only', async () => {
    const pod = await runningPod('metered');
    env.step(2);
    const runtime = await env.client.pods.runtime(pod.id);
    assert.equal(runtime.id, pod.id);
    assert.equal(runtime.status, 'RUNNING');
    assert.ok(runtime.runningMillis >= 2 * STEP_MS, `ran ${runtime.runningMillis} ms`);
    assert.equal(runtime.runningSeconds, Math.floor(runtime.runningMillis / 1000));
    await env.client.pods.pause(pod.id);
    env.step();
    const paused = await env.client.pods.runtime(pod.id);
    env.step(3);
    assert.equal((await env.client.pods.runtime(pod.id)).runningMillis, paused.runningMillis);
  });

  it('delete: TERMINATING, then TERMINATED, then not found after the retention period', async () => {
    const pod = await runningPod('doomed');
    await env.client.pods.delete(pod.id);
    assert.equal((await env.client.pods.get(pod.id)).status, 'TERMINATING');
    env.step();
    assert.equal((await env.client.pods.get(pod.id)).status, 'TERMINATED');
    await env.client.pods.delete(pod.id);
    env.sim.clock.advance(RETENTION_MS);
    await rejectsWithCode(env.client.pods.get(pod.id), { code: ApiCode.PodNotFound, kind: 'notFound' });
  });

  it('an unknown id is 13000 for every operation on one pod', async () => {
    const notFound = { code: ApiCode.PodNotFound, kind: 'notFound' } as const;
    const { pods } = env.client;
    await rejectsWithCode(pods.get(MISSING_ID), notFound);
    await rejectsWithCode(pods.pause(MISSING_ID), notFound);
    await rejectsWithCode(pods.resume(MISSING_ID), notFound);
    await rejectsWithCode(pods.delete(MISSING_ID), notFound);
    await rejectsWithCode(pods.logs(MISSING_ID), notFound);
    await rejectsWithCode(pods.runtime(MISSING_ID), notFound);
  });

  it('another organisation neither sees nor touches the pod', async () => {
    const pod = await runningPod('ours');
    const notFound = { code: ApiCode.PodNotFound } as const;
    await rejectsWithCode(env.stranger.pods.get(pod.id), notFound);
    await rejectsWithCode(env.stranger.pods.pause(pod.id), notFound);
    await rejectsWithCode(env.stranger.pods.delete(pod.id), notFound);
    await rejectsWithCode(env.stranger.pods.logs(pod.id), notFound);
    assert.ok((await env.stranger.pods.list()).every((item) => item.id !== pod.id));
    assert.equal((await env.client.pods.get(pod.id)).status, 'RUNNING');
  });

  it('bad input is refused by the client before sending, and by the service (400, 10001)', async () => {
    const offer = await anOffer();
    const request = { name: 'bad', image: 'img', gpuType: offer.gpuType, gpuCount: 1 };
    const before = env.callsOf('pods.create');
    await rejectsLocally(env.client.pods.create({ ...request, gpuCount: 3 }), 'body.gpuCount', /power of 2/);
    await rejectsLocally(env.client.pods.create({ ...request, maxPrice: 2 }), 'body.maxPrice', /isSpot/);
    await rejectsLocally(env.client.pods.get('pod-1'), 'params.id', /cloud id/);
    assert.equal(env.callsOf('pods.create'), before, 'nothing was sent');

    for (const body of [
      { ...request, gpuCount: 3 },
      { ...request, maxPrice: 2 },
      { ...request, callbackUrl: 'ftp://hooks' },
    ]) {
      const raw = await env.raw('POST', '/v2/pods', { body });
      assert.equal(raw.status, 400);
      assert.equal(raw.envelope.code, ApiCode.InvalidRequest);
    }
  });

  it('a GPU type the service does not offer is 10001 from the service', async () => {
    await rejectsWithCode(newPod('nowhere', { gpuType: 'NVIDIA Imaginary 1TB', regions: [] }), {
      code: ApiCode.InvalidRequest,
      message: /gpuType/,
    });
  });

  it('every pod operation requires a known API key (HTTP 401)', async () => {
    const unknown = env.clientWithKey('not-a-key');
    await rejectsWithCode(unknown.pods.list(), { code: ApiCode.InvalidRequest, httpStatus: 401 });
    await rejectsWithCode(unknown.pods.searchGpus(), { code: ApiCode.InvalidRequest, httpStatus: 401 });
  });

  itExercisedEveryOperation(env, 'pods');
});
