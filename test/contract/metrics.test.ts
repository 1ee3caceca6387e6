import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiCode } from '../../src/api/codes.ts';
import type { MetricResponse } from '../../src/api/schemas/index.ts';
import {
  itExercisedEveryOperation,
  MISSING_ID,
  rejectsLocally,
  rejectsWithCode,
  useContract,
} from './harness.ts';

const env = useContract();

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

/** A running pod with `gpus` GPUs that has been up for 20 simulated minutes. */
async function podWithHistory(gpus = 2) {
  const { items } = await env.client.pods.searchGpus({ gpuCounts: [gpus], isSpot: false });
  const offer = items.find((item) => item.gpuCountOptions.some((option) => option.available));
  assert.ok(offer, `an available ${gpus}-GPU machine`);
  const pod = await env.client.pods.create({
    name: 'observed',
    image: 'img',
    gpuType: offer.gpuType,
    gpuCount: gpus,
    regions: [offer.region],
  });
  env.step();
  env.sim.clock.advance(20 * MINUTE);
  return pod;
}

function timestamps(response: MetricResponse): number[] {
  return response.series[0]?.data_points.map((point) => point.timestamp) ?? [];
}

describe('pod metrics against the simulator', () => {
  it('cpu: one series for the pod, a point every 30 s of the last hour by default', async () => {
    const pod = await podWithHistory();
    const cpu = await env.client.metrics.cpu(pod.id);
    assert.equal(cpu.metric_name, 'cpu_usage');
    assert.equal(cpu.series.length, 1);
    assert.deepEqual(cpu.series[0]?.labels, { pod_id: pod.id });
    const stamps = timestamps(cpu);
    assert.ok(stamps.length >= 40, `${stamps.length} points`);
    assert.ok(stamps.every((t, i) => i === 0 || t - (stamps[i - 1] ?? 0) === 30_000));
    assert.ok((stamps.at(-1) ?? 0) <= env.sim.clock.now());
    assert.ok((stamps[0] ?? 0) >= env.sim.clock.now() - HOUR);
  });

  it('gpu and gpuMemory: one series per GPU; memory series carry latest_total in bytes', async () => {
    const pod = await podWithHistory(2);
    const gpu = await env.client.metrics.gpu(pod.id);
    assert.equal(gpu.metric_name, 'gpu_utilization');
    assert.deepEqual(
      gpu.series.map((series) => series.labels.gpu_show_index),
      ['0', '1'],
    );
    assert.ok(gpu.series.every((series) => series.data_points.every((p) => p.value >= 0 && p.value <= 100)));

    const gpuMemory = await env.client.metrics.gpuMemory(pod.id);
    assert.equal(gpuMemory.metric_name, 'gpu_memory');
    assert.equal(gpuMemory.series.length, 2);
    for (const series of gpuMemory.series) {
      assert.ok((series.latest_total ?? 0) > 0);
      assert.ok(series.data_points.every((p) => p.value <= (series.latest_total ?? 0)));
    }

    const memory = await env.client.metrics.memory(pod.id);
    assert.equal(memory.metric_name, 'memory_usage');
    assert.ok((memory.series[0]?.latest_total ?? 0) > 0);
  });

  it('a window and a step: points at the step, within the window', async () => {
    const pod = await podWithHistory();
    const end = env.sim.clock.now();
    const start = end - 15 * MINUTE;
    const cpu = await env.client.metrics.cpu(pod.id, { start, end, step: '5m' });
    const stamps = timestamps(cpu);
    assert.ok(stamps.length >= 3);
    assert.ok(stamps.every((t) => t >= start && t <= end && t % (5 * MINUTE) === 0));
  });

  it('only start: the hour from start; only end: the hour before end', async () => {
    const pod = await podWithHistory();
    const now = env.sim.clock.now();
    const fromStart = timestamps(await env.client.metrics.cpu(pod.id, { start: now - 10 * MINUTE }));
    assert.ok(fromStart.every((t) => t >= now - 10 * MINUTE));
    const toEnd = timestamps(await env.client.metrics.cpu(pod.id, { end: now - 10 * MINUTE }));
    assert.ok(toEnd.length > 0);
    assert.ok(toEnd.every((t) => t <= now - 10 * MINUTE && t >= now - 70 * MINUTE));
  });

  it('a window longer than the step allows is refused by the client and by the service (10001)', async () => {
    const pod = await podWithHistory();
    const end = env.sim.clock.now();
    await rejectsLocally(
      env.client.metrics.cpu(pod.id, { start: end - 4 * HOUR, end }),
      'query.end',
      /longer than the 3 hours step 30s allows/,
    );
    await rejectsLocally(
      env.client.metrics.gpu(pod.id, { start: end - 13 * HOUR, end, step: '5m' }),
      'query.end',
      /step 5m/,
    );
    const raw = await env.raw('GET', `/v2/metrics/cpu/pods/${pod.id}?start=${end - 4 * HOUR}&end=${end}`);
    assert.equal(raw.status, 400);
    assert.equal(raw.envelope.code, ApiCode.InvalidRequest);
    const badStep = await env.raw('GET', `/v2/metrics/memory/pods/${pod.id}?step=2m`);
    assert.equal(badStep.envelope.code, ApiCode.InvalidRequest);
    const inverted = await env.raw('GET', `/v2/metrics/gpu/pods/${pod.id}?start=${end}&end=${end - 1}`);
    assert.equal(inverted.envelope.code, ApiCode.InvalidRequest);
    assert.equal(
      timestamps(await env.client.metrics.cpu(pod.id, { start: end - 3 * HOUR, end })).length > 0,
      true,
      'exactly the longest window is accepted',
    );
  });

  it('storage: current usage of the container volume', async () => {
    const pod = await podWithHistory(1);
    const storage = await env.client.metrics.storage(pod.id);
    assert.equal(storage.pod_id, pod.id);
    const { used_bytes, total_bytes, usage_ratio, last_updated } = storage.ephemeral_storage;
    assert.ok(used_bytes > 0 && used_bytes <= total_bytes);
    assert.ok(Math.abs(usage_ratio - used_bytes / total_bytes) < 0.001);
    assert.ok(last_updated > pod.createdAt && last_updated <= env.sim.clock.now());
  });

  it('an unknown pod, or another organisation’s, is 13000', async () => {
    const pod = await podWithHistory(1);
    const notFound = { code: ApiCode.PodNotFound, kind: 'notFound' } as const;
    await rejectsWithCode(env.client.metrics.cpu(MISSING_ID), notFound);
    await rejectsWithCode(env.client.metrics.storage(MISSING_ID), notFound);
    await rejectsWithCode(env.stranger.metrics.memory(pod.id), notFound);
    await rejectsWithCode(env.stranger.metrics.gpuMemory(pod.id), notFound);
  });

  it('metrics require a known API key (HTTP 401)', async () => {
    const unknown = env.clientWithKey('not-a-key');
    await rejectsWithCode(unknown.metrics.cpu('1'), { code: ApiCode.InvalidRequest, httpStatus: 401 });
    await rejectsWithCode(unknown.metrics.storage('1'), { code: ApiCode.InvalidRequest, httpStatus: 401 });
  });

  itExercisedEveryOperation(env, 'metrics');
});
