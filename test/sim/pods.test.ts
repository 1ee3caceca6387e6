import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiCode } from '../../src/api/codes.ts';
import { eventually } from '../support/eventually.ts';
import { podRequest, STEP, startReceiver, useSimulator } from './helpers.ts';

const RETENTION = 10 * STEP;
const sim = useSimulator({ retentionMs: RETENTION });

interface PodData {
  id: string;
  status: string;
  name: string;
  environmentVars: Array<{ key: string; value: string }>;
}

async function runningPod(name: string, extra: Record<string, unknown> = {}): Promise<PodData> {
  const pod = await sim.ok<PodData>('POST', '/v2/pods', { body: podRequest(name, extra) });
  await sim.advance();
  assert.equal((await sim.ok<PodData>('GET', `/v2/pods/${pod.id}`)).status, 'RUNNING');
  return pod;
}

const status = async (id: string) => (await sim.ok<PodData>('GET', `/v2/pods/${id}`)).status;

describe('pod state machine', () => {
  it('create answers INITIALIZING with POD_ID added; one step later the pod is RUNNING', async () => {
    const pod = await sim.ok<PodData>('POST', '/v2/pods', {
      body: podRequest('first', { environmentVars: [{ key: 'A', value: '1' }] }),
    });
    assert.match(pod.id, /^\d+$/);
    assert.equal(pod.status, 'INITIALIZING');
    assert.deepEqual(pod.environmentVars, [
      { key: 'A', value: '1' },
      { key: 'POD_ID', value: pod.id },
    ]);
    await sim.advance(STEP - 1);
    assert.equal(await status(pod.id), 'INITIALIZING');
    await sim.advance(1);
    assert.equal(await status(pod.id), 'RUNNING');
  });

  it('ids are numeric, unique and increasing', async () => {
    const a = await sim.ok<PodData>('POST', '/v2/pods', { body: podRequest('id-a') });
    const b = await sim.ok<PodData>('POST', '/v2/pods', { body: podRequest('id-b') });
    assert.ok(BigInt(b.id) > BigInt(a.id));
  });

  it('pause: RUNNING → PAUSING → PAUSED; resume: PAUSED → INITIALIZING → RUNNING', async () => {
    const pod = await runningPod('pausable');
    assert.equal(await sim.ok('POST', `/v2/pods/${pod.id}/pause`), null);
    assert.equal(await status(pod.id), 'PAUSING');
    await sim.advance();
    assert.equal(await status(pod.id), 'PAUSED');
    await sim.ok('POST', `/v2/pods/${pod.id}/resume`);
    assert.equal(await status(pod.id), 'INITIALIZING');
    await sim.advance();
    assert.equal(await status(pod.id), 'RUNNING');
  });

  it('pause of a pod that is not RUNNING, and resume of one that is not PAUSED, answer 12001', async () => {
    const pod = await sim.ok<PodData>('POST', '/v2/pods', { body: podRequest('early') });
    const paused = await sim.fails(ApiCode.ResourceStatusInvalid, 'POST', `/v2/pods/${pod.id}/pause`);
    assert.match(paused.body.message, /INITIALIZING/);
    await sim.advance();
    await sim.fails(ApiCode.ResourceStatusInvalid, 'POST', `/v2/pods/${pod.id}/resume`);
    await sim.fails(ApiCode.ResourceStatusInvalid, 'POST', `/openapi/v1/pods/resume/${pod.id}`);
    assert.equal(await status(pod.id), 'RUNNING');
  });

  it('delete: TERMINATING → TERMINATED, visible for the retention period, then 13000', async () => {
    const pod = await runningPod('doomed');
    await sim.ok('DELETE', `/v2/pods/${pod.id}`);
    assert.equal(await status(pod.id), 'TERMINATING');
    await sim.advance();
    assert.equal(await status(pod.id), 'TERMINATED');
    // A second delete of a terminated pod succeeds and changes nothing.
    await sim.ok('DELETE', `/v2/pods/${pod.id}`);
    await sim.advance(RETENTION - 1);
    assert.equal(await status(pod.id), 'TERMINATED');
    await sim.advance(1);
    await sim.fails(ApiCode.PodNotFound, 'GET', `/v2/pods/${pod.id}`);
    await sim.fails(ApiCode.PodNotFound, 'DELETE', `/v2/pods/${pod.id}`);
  });

  it('an unknown pod id answers 13000 on every pod operation', async () => {
    for (const [method, path] of [
      ['GET', '/v2/pods/999'],
      ['DELETE', '/v2/pods/999'],
      ['POST', '/v2/pods/999/pause'],
      ['GET', '/v2/pods/999/logs'],
      ['GET', '/v2/pods/999/runtime'],
      ['GET', '/openapi/v1/pods/999'],
      ['GET', '/v2/metrics/cpu/pods/999'],
    ] as const) {
      await sim.fails(ApiCode.PodNotFound, method, path);
    }
  });
});

describe('pod views', () => {
  it('v1 and v2 are two views of one pod: v1 shows INITIALIZE, podName and integer ids', async () => {
    const id = await sim.ok<number>('POST', '/openapi/v1/pods/create', {
      body: { podName: 'legacy', image: 'img', gpuType: 'NVIDIA L40S', gpuCount: 2, region: 'us-east-1' },
    });
    assert.equal(typeof id, 'number');
    const v1 = await sim.ok<Record<string, unknown>>('GET', `/openapi/v1/pods/${id}`);
    assert.equal(v1.status, 'INITIALIZE');
    assert.equal(v1.podName, 'legacy');
    assert.equal(v1.id, id);
    assert.match(String(v1.createdAt), /^\d{4}-\d\d-\d\dT/);
    const v2 = await sim.ok<Record<string, unknown>>('GET', `/v2/pods/${id}`);
    assert.equal(v2.id, String(id));
    assert.equal(v2.status, 'INITIALIZING');
    assert.equal(v2.name, 'legacy');
    assert.equal(v2.gpuCount, 2);
    const list = await sim.ok<Array<Record<string, unknown>>>('GET', '/openapi/v1/pods/list');
    assert.ok(list.some((pod) => pod.id === id));
  });

  it('the v2 list filters by statusList and regionList, repeated or comma-separated', async () => {
    const pod = await runningPod('listed');
    await sim.ok('POST', `/v2/pods/${pod.id}/pause`);
    await sim.advance();
    const paused = await sim.ok<PodData[]>('GET', '/v2/pods?statusList=PAUSED');
    assert.ok(paused.length > 0 && paused.every((p) => p.status === 'PAUSED'));
    assert.ok(paused.some((p) => p.id === pod.id));
    const both = await sim.ok<PodData[]>('GET', '/v2/pods?statusList=PAUSED,RUNNING&regionList=us-east-1');
    assert.ok(both.every((p) => p.status === 'PAUSED' || p.status === 'RUNNING'));
    assert.deepEqual(await sim.ok('GET', '/v2/pods?regionList=eu-west-1&regionList=ap-southeast-1'), []);
  });
});

describe('pod runtime', () => {
  it('accrues only while RUNNING, to the millisecond', async () => {
    const pod = await sim.ok<PodData>('POST', '/v2/pods', { body: podRequest('billed') });
    const runtime = async () => {
      const data = await sim.ok<{ runningMillis: string; runningSeconds: string }>(
        'GET',
        `/v2/pods/${pod.id}/runtime`,
      );
      assert.equal(data.runningSeconds, String(Math.floor(Number(data.runningMillis) / 1000)));
      return Number(data.runningMillis);
    };
    await sim.advance(STEP / 2);
    assert.equal(await runtime(), 0, 'nothing accrues while INITIALIZING');
    await sim.advance(STEP / 2 + 4 * STEP);
    assert.equal(await runtime(), 4 * STEP);
    await sim.ok('POST', `/v2/pods/${pod.id}/pause`);
    await sim.advance(10 * STEP);
    assert.equal(await runtime(), 4 * STEP, 'nothing accrues while PAUSING or PAUSED');
    await sim.ok('POST', `/v2/pods/${pod.id}/resume`);
    await sim.advance(STEP + 3 * STEP);
    assert.equal(await runtime(), 7 * STEP);
    await sim.ok('DELETE', `/v2/pods/${pod.id}`);
    await sim.advance(5 * STEP);
    assert.equal(await runtime(), 7 * STEP, 'nothing accrues once terminating');
  });
});

describe('pod logs', () => {
  it('pages with nextCursor without skipping or repeating, null at the end', async () => {
    const pod = await runningPod('chatty', {
      expose: [80, 81, 82, 83].map((port) => ({ port, protocol: 'HTTP' })),
    });
    const all = await sim.ok<{ items: Array<{ content: string }>; nextCursor: string | null }>(
      'GET',
      `/v2/pods/${pod.id}/logs?limit=1000`,
    );
    assert.equal(all.nextCursor, null);
    assert.ok(all.items.length >= 6, `${all.items.length} container lines`);
    const paged: string[] = [];
    let cursor: string | null = '';
    while (cursor !== null) {
      const page: { items: Array<{ content: string }>; nextCursor: string | null } = await sim.ok(
        'GET',
        `/v2/pods/${pod.id}/logs?limit=2${cursor ? `&cursor=${cursor}` : ''}`,
      );
      assert.ok(page.items.length <= 2);
      paged.push(...page.items.map((line) => line.content));
      cursor = page.nextCursor;
    }
    assert.deepEqual(
      paged,
      all.items.map((line) => line.content),
    );
  });

  it('type SYSTEM shows platform events; keyword filters; a forged cursor is 10001', async () => {
    const pod = await runningPod('eventful');
    const system = await sim.ok<{ items: Array<{ content: string }> }>(
      'GET',
      `/v2/pods/${pod.id}/logs?type=SYSTEM`,
    );
    assert.ok(system.items.some((line) => line.content.includes('RUNNING')));
    const filtered = await sim.ok<{ items: Array<{ content: string }> }>(
      'GET',
      `/v2/pods/${pod.id}/logs?keyword=pulled`,
    );
    assert.deepEqual(
      filtered.items.map((line) => line.content),
      ['image pulled'],
    );
    const bad = await sim.fails(ApiCode.InvalidRequest, 'GET', `/v2/pods/${pod.id}/logs?cursor=nonsense`);
    assert.equal(bad.status, 400);
    assert.match(bad.body.message, /cursor/);
  });
});

describe('pod lifecycle callbacks', () => {
  it('POST {podId, status, timestamp} to callbackUrl on RUNNING, DEGRADED, FAILED and TERMINATED', async (t) => {
    const receiver = await startReceiver(t);
    const pod = await runningPod('watched', { callbackUrl: `${receiver.url}/hook` });
    const simulator = await sim.running();
    assert.ok(simulator.faults.failPod(pod.id, 'DEGRADED'));
    assert.ok(simulator.faults.failPod(pod.id, 'FAILED'));
    await sim.ok('DELETE', `/v2/pods/${pod.id}`);
    await sim.advance();
    await eventually(() => assert.equal(receiver.received.length, 4));
    // Deliveries run concurrently: compare as a set, each with its own shape.
    const statuses = receiver.received.map((r) => (r.body as { status: string }).status).sort();
    assert.deepEqual(statuses, ['DEGRADED', 'FAILED', 'RUNNING', 'TERMINATED']);
    for (const { path, body, headers } of receiver.received) {
      assert.equal(path, '/hook');
      assert.equal(headers['content-type'], 'application/json');
      const { podId, timestamp } = body as { podId: string; timestamp: string };
      assert.equal(podId, pod.id);
      assert.match(timestamp, /^\d+$/);
    }
  });
});
