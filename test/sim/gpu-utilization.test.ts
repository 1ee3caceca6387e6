import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { GpuCloudClient } from '../../src/api/client.ts';
import type { MetricResponse } from '../../src/api/schemas/index.ts';
import { startSimulator } from '../../src/sim/index.ts';
import { KEY, podRequest, STEP, useSimulator } from './helpers.ts';

const sim = useSimulator();
const MINUTE = 60_000;
const SAMPLE = 30_000;

let typed: GpuCloudClient | undefined;
after(() => typed?.close());

/** The typed client, as the operator's idle detector will read the series. */
async function client(): Promise<GpuCloudClient> {
  typed ??= new GpuCloudClient({
    baseUrl: (await sim.running()).url,
    apiKey: KEY,
    rateLimit: { requestsPerSecond: 10_000, burst: 10_000 },
  });
  return typed;
}

const now = async () => (await sim.running()).clock.now();

/** Moves the clock to the next sample instant, so that the boundaries below fall on a sample. */
async function toSampleInstant(): Promise<number> {
  await sim.advance((SAMPLE - ((await now()) % SAMPLE)) % SAMPLE);
  return now();
}

/** A 2-GPU pod that has been RUNNING for `minutes` minutes; answers its id and when it started. */
async function runningPod(name: string, minutes: number): Promise<{ id: string; runningFrom: number }> {
  const { id } = await sim.ok<{ id: string }>('POST', '/v2/pods', {
    body: podRequest(name, { gpuCount: 2 }),
  });
  await sim.advance(STEP);
  const runningFrom = await now();
  assert.equal((await sim.ok<{ status: string }>('GET', `/v2/pods/${id}`)).status, 'RUNNING');
  await sim.advance(minutes * MINUTE);
  return { id, runningFrom };
}

/** gpu_utilization over `[start, end]` at 30 s, read with the typed client. */
async function gpuSeries(id: string, start: number, end: number): Promise<MetricResponse['series']> {
  const answer = await (await client()).metrics.gpu(id, { start, end, step: '30s' });
  assert.equal(answer.metric_name, 'gpu_utilization');
  return answer.series;
}

/** Step-aligned instants in `[from, to)`. */
function aligned(from: number, to: number): number[] {
  const stamps: number[] = [];
  for (let t = Math.ceil(from / SAMPLE) * SAMPLE; t < to; t += SAMPLE) stamps.push(t);
  return stamps;
}

const valuesOf = (series: MetricResponse['series'][number] | undefined) =>
  new Map(series?.data_points.map((point) => [point.timestamp, point.value]));

describe('settable GPU utilisation', () => {
  it('3% set at t: every sample at or after t reads 3 on every GPU; earlier samples keep their values', async () => {
    const { id, runningFrom } = await runningPod('idle-soon', 20);
    const setAt = await toSampleInstant();
    const before = await gpuSeries(id, runningFrom, setAt - 1);
    assert.ok((before[0]?.data_points.length ?? 0) >= 40, 'twenty minutes of samples before the setting');

    (await sim.running()).metrics.setGpuUtilization(id, 3);
    await sim.advance(40 * MINUTE);
    const end = await now();
    const series = await gpuSeries(id, runningFrom, end);

    assert.deepEqual(
      series.map((s) => s.labels),
      [
        { pod_id: id, gpu_show_index: '0' },
        { pod_id: id, gpu_show_index: '1' },
      ],
    );
    for (const [index, gpu] of series.entries()) {
      const earlier = valuesOf(before[index]);
      const stamps = gpu.data_points.map((point) => point.timestamp);
      assert.deepEqual(stamps, aligned(runningFrom, end + 1), 'one sample per step while running');
      assert.equal(valuesOf(gpu).get(setAt), 3, 'the sample at the very instant of the setting is 3');
      const after = gpu.data_points.filter((point) => point.timestamp >= setAt);
      assert.equal(after.length, aligned(setAt, end + 1).length);
      assert.ok(after.length >= 80, `${after.length} samples in the forty minutes`);
      assert.ok(
        after.every((point) => point.value === 3),
        `GPU ${index}: every sample after t is 3`,
      );
      const prior = gpu.data_points.filter((point) => point.timestamp < setAt);
      assert.equal(prior.length, earlier.size);
      for (const point of prior) {
        assert.equal(point.value, earlier.get(point.timestamp), 'a sample before t is what it was');
        assert.ok(point.value >= 40 && point.value <= 100, 'the synthetic busy values before t');
      }
    }
    // The default query (the last hour) sees the same values.
    const latest = await (await client()).metrics.gpu(id);
    assert.ok(latest.series.every((s) => s.data_points.at(-1)?.value === 3));
  });

  it('over HTTP, one GPU at a time; later settings take over from their own instant', async () => {
    const { id, runningFrom } = await runningPod('one-card', 5);
    const all = await sim.admin('PUT', '/metrics/gpu-utilization', { id, percent: 3 });
    assert.equal(all.status, 200, JSON.stringify(all.body));
    const firstAt = await now();
    assert.deepEqual(all.body, { ok: true, from: firstAt });
    await sim.advance(10 * MINUTE);
    const one = await sim.admin('PUT', '/metrics/gpu-utilization', { id, percent: 97.5, gpuIndex: 1 });
    assert.equal(one.status, 200, JSON.stringify(one.body));
    const secondAt = await now();
    await sim.advance(10 * MINUTE);

    const [gpu0, gpu1] = await gpuSeries(id, runningFrom, await now());
    const at = (series: typeof gpu0, from: number, to: number) =>
      series?.data_points.filter((p) => p.timestamp >= from && p.timestamp < to).map((p) => p.value) ?? [];
    const late = await now();
    assert.ok(
      at(gpu0, firstAt, late + 1).every((v) => v === 3),
      'GPU 0 keeps 3',
    );
    assert.ok(at(gpu1, firstAt, secondAt).every((v) => v === 3));
    const after = at(gpu1, secondAt, late + 1);
    assert.ok(after.length >= 20 && after.every((v) => v === 97.5), 'GPU 1 reads 97.5 from its setting on');
    assert.ok(at(gpu0, runningFrom, firstAt).every((v) => v !== 3 && v >= 40));
  });

  it('no samples while the pod was not RUNNING: before it started and while paused', async () => {
    const { id } = await sim.ok<{ id: string; createdAt: string }>('POST', '/v2/pods', {
      body: podRequest('paused-a-while', { gpuCount: 2 }),
    });
    const createdAt = await now();
    // Set while still initialising: it applies once the pod runs.
    (await sim.running()).metrics.setGpuUtilization(id, 3);
    await sim.advance(STEP);
    const firstRun = await now();
    await sim.advance(10 * MINUTE);
    const pausedAt = await toSampleInstant();
    await (await client()).pods.pause(id);
    await sim.advance(STEP);
    assert.equal((await sim.ok<{ status: string }>('GET', `/v2/pods/${id}`)).status, 'PAUSED');
    await sim.advance(30 * MINUTE);
    await (await client()).pods.resume(id);
    await sim.advance(STEP);
    const secondRun = await now();
    assert.equal((await sim.ok<{ status: string }>('GET', `/v2/pods/${id}`)).status, 'RUNNING');
    await sim.advance(10 * MINUTE);
    const end = await now();

    // The instant of the pause is a sample instant, but the pod stopped running then: no sample.
    const expected = [...aligned(firstRun, pausedAt), ...aligned(secondRun, end + 1)];
    assert.equal(expected.includes(pausedAt), false);
    for (const series of await gpuSeries(id, createdAt, end)) {
      assert.deepEqual(
        series.data_points.map((p) => p.timestamp),
        expected,
        'samples only in the two RUNNING periods',
      );
      assert.ok(series.data_points.every((p) => p.value === 3));
    }
    // A window wholly inside the pause has no samples at all.
    const paused = await gpuSeries(id, pausedAt + STEP, secondRun - STEP);
    assert.equal(paused.length, 2, 'still one series per GPU');
    assert.ok(paused.every((series) => series.data_points.length === 0));
  });

  it('bad input is a 400 naming the problem, and changes nothing', async () => {
    const { id, runningFrom } = await runningPod('validated', 5);
    const cpuPod = await sim.ok<{ id: string }>('POST', '/v2/pods', {
      body: podRequest('cpu-only', { resourceType: 'CPU' }),
    });
    const cases: Array<[unknown, RegExp]> = [
      [{ id, percent: 101 }, /body\.percent/],
      [{ id, percent: -1 }, /body\.percent/],
      [{ id, percent: '3' }, /body\.percent/],
      [{ percent: 3 }, /body\.id/],
      [{ id, percent: 3, gpuIndex: 0.5 }, /body\.gpuIndex/],
      [{ id, percent: 3, extra: true }, /extra/],
      [{ id, percent: 3, gpuIndex: 2 }, /gpuIndex must be an integer from 0 to 1/],
      [{ id: '999999999', percent: 3 }, /pod 999999999 does not exist/],
      [{ id: cpuPod.id, percent: 3 }, /CPU pod/],
    ];
    for (const [body, message] of cases) {
      const answer = await sim.admin('PUT', '/metrics/gpu-utilization', body);
      assert.equal(answer.status, 400, JSON.stringify(body));
      assert.match((answer.body as { error: string }).error, message, JSON.stringify(body));
    }
    const running = await sim.running();
    assert.throws(() => running.metrics.setGpuUtilization(id, 100.5), /percent must be between 0 and 100/);
    assert.throws(() => running.metrics.setGpuUtilization(id, Number.NaN), /percent/);
    await sim.advance(5 * MINUTE);
    const series = await gpuSeries(id, runningFrom, await now());
    assert.ok(
      series.every((s) => s.data_points.every((p) => p.value >= 40)),
      'no refused setting took effect',
    );
  });

  it('the admin endpoint refuses callers without the admin token, as the other admin endpoints do', async (t) => {
    const guarded = await startSimulator({
      apiKeys: [KEY],
      adminToken: 'letmein',
      manualTime: true,
      transitionMs: 0,
    });
    t.after(() => guarded.stop());
    const guardedClient = new GpuCloudClient({ baseUrl: guarded.url, apiKey: KEY });
    t.after(() => guardedClient.close());
    const pod = await guardedClient.pods.create({
      name: 'guarded',
      image: 'img',
      gpuType: 'NVIDIA L40S',
      gpuCount: 1,
    });
    const put = (headers: Record<string, string>) =>
      fetch(`${guarded.url}/_sim/metrics/gpu-utilization`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify({ id: pod.id, percent: 3 }),
      });
    const refusedHeaders: Array<Record<string, string>> = [
      {},
      { 'x-api-key': KEY },
      { 'x-sim-admin-token': 'wrong' },
    ];
    for (const headers of refusedHeaders) {
      const refused = await put(headers);
      assert.equal(refused.status, 403, JSON.stringify(headers));
      assert.match(((await refused.json()) as { error: string }).error, /x-sim-admin-token/);
    }
    guarded.clock.advance(5 * MINUTE);
    const untouched = await guardedClient.metrics.gpu(pod.id);
    assert.ok((untouched.series[0]?.data_points.length ?? 0) > 0);
    assert.ok(
      untouched.series[0]?.data_points.every((p) => p.value >= 40),
      'a refused call set nothing',
    );

    assert.equal((await put({ 'x-sim-admin-token': 'letmein' })).status, 200);
    guarded.clock.advance(5 * MINUTE);
    const set = await guardedClient.metrics.gpu(pod.id);
    assert.equal(set.series[0]?.data_points.at(-1)?.value, 3);
  });
});
