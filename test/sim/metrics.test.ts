import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { ApiCode } from '../../src/api/codes.ts';
import { podRequest, useSimulator } from './helpers.ts';

const sim = useSimulator();
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

interface Metric {
  metric_name: string;
  series: Array<{
    labels: Record<string, string>;
    data_points: Array<{ timestamp: number; value: number }>;
    latest_total?: number;
  }>;
}

let podId = '';
let createdAt = 0;

before(async () => {
  const pod = await sim.ok<{ id: string; createdAt: string }>('POST', '/v2/pods', {
    body: podRequest('measured', { gpuCount: 2 }),
  });
  podId = pod.id;
  createdAt = Number(pod.createdAt);
  // Five hours of life, so every window below lies within it; then to the middle of a 30 s step,
  // so that a one-hour window holds exactly 120 points whatever the start time was.
  await sim.advance(5 * HOUR);
  const now = (await sim.running()).clock.now();
  await sim.advance((45_000 - (now % 30_000)) % 30_000);
});

/** An instant in the middle of a 5-minute step, about `hours` after the pod was created. */
const midStep = (hours: number) =>
  Math.floor((createdAt + hours * HOUR) / (5 * MINUTE)) * 5 * MINUTE + 150_000;

const metric = (kind: string, query = '') =>
  sim.ok<Metric>('GET', `/v2/metrics/${kind}/pods/${podId}${query}`);
const stamps = (answer: Metric) => answer.series[0]?.data_points.map((point) => point.timestamp) ?? [];

describe('pod metrics', () => {
  it('default: the last hour at 30 s steps', async () => {
    const now = (await sim.running()).clock.now();
    const cpu = await metric('cpu');
    assert.equal(cpu.metric_name, 'cpu_usage');
    const points = stamps(cpu);
    assert.equal(points.length, 120);
    assert.ok(points.every((t, i) => i === 0 || t - (points[i - 1] as number) === 30_000));
    assert.ok((points[0] as number) >= now - HOUR && (points.at(-1) as number) <= now);
    assert.ok(cpu.series[0]?.data_points.every((p) => p.value >= 0 && p.value <= 1));
  });

  it('only start: start plus one hour; only end: end minus one hour', async () => {
    const start = midStep(1);
    const fromStart = stamps(await metric('cpu', `?start=${start}&step=5m`));
    assert.equal(fromStart.length, 12);
    assert.ok(fromStart.every((t) => t >= start && t <= start + HOUR));
    const end = midStep(3);
    const toEnd = stamps(await metric('cpu', `?end=${end}&step=5m`));
    assert.equal(toEnd.length, 12);
    assert.ok(toEnd.every((t) => t >= end - HOUR && t <= end));
  });

  it('a window longer than the step allows is 10001 naming the rule; 12 h at 5m is fine', async () => {
    const start = createdAt;
    const tooLong = await sim.fails(
      ApiCode.InvalidRequest,
      'GET',
      `/v2/metrics/gpu/pods/${podId}?start=${start}&end=${start + 3 * HOUR + 1}`,
    );
    assert.equal(tooLong.status, 400);
    assert.match(tooLong.body.message, /step 30s/);
    await sim.fails(
      ApiCode.InvalidRequest,
      'GET',
      `/v2/metrics/memory/pods/${podId}?start=${start}&end=${start + 12 * HOUR + 1}&step=5m`,
    );
    await sim.ok('GET', `/v2/metrics/memory/pods/${podId}?start=${start}&end=${start + 12 * HOUR}&step=5m`);
    await sim.fails(ApiCode.InvalidRequest, 'GET', `/v2/metrics/cpu/pods/${podId}?step=2m`);
    await sim.fails(
      ApiCode.InvalidRequest,
      'GET',
      `/v2/metrics/cpu/pods/${podId}?start=${start + HOUR}&end=${start}`,
    );
  });

  it('GPU series: one per card with gpu_show_index; memory series carry latest_total in bytes', async () => {
    const gpu = await metric('gpu');
    assert.deepEqual(
      gpu.series.map((s) => s.labels),
      [
        { pod_id: podId, gpu_show_index: '0' },
        { pod_id: podId, gpu_show_index: '1' },
      ],
    );
    const gpuMemory = await sim.ok<Metric>('GET', `/v2/metrics/gpu/pods/${podId}/memory`);
    assert.equal(gpuMemory.metric_name, 'gpu_memory');
    assert.equal(gpuMemory.series[0]?.latest_total, 48 * 1024 ** 3);
    const ram = await metric('memory');
    assert.ok((ram.series[0]?.latest_total ?? 0) > 0);
    assert.ok(ram.series[0]?.data_points.every((p) => p.value <= (ram.series[0]?.latest_total ?? 0)));
  });

  it('the same window read twice gives the same series', async () => {
    const query = `?start=${createdAt + HOUR}&end=${createdAt + 2 * HOUR}`;
    assert.deepEqual(await metric('gpu', query), await metric('gpu', query));
  });

  it('storage: current ephemeral storage, start/end/step ignored', async () => {
    const storage = await sim.ok<{ pod_id: string; ephemeral_storage: Record<string, number> }>(
      'GET',
      `/v2/metrics/storage/pods/${podId}?step=nonsense`,
    );
    assert.equal(storage.pod_id, podId);
    const { used_bytes, total_bytes, usage_ratio } = storage.ephemeral_storage;
    assert.equal(total_bytes, 50 * 1024 ** 3);
    assert.ok((used_bytes ?? 0) > 0 && (used_bytes ?? 0) < (total_bytes ?? 0));
    assert.ok(Math.abs((usage_ratio ?? 0) - (used_bytes ?? 0) / (total_bytes ?? 1)) < 0.001);
  });
});
