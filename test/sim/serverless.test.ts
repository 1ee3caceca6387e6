import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiCode } from '../../src/api/codes.ts';
import { eventually } from '../support/eventually.ts';
import { endpointRequest, startReceiver, useSimulator } from './helpers.ts';

const sim = useSimulator({ delivery: { retryBaseMs: 1000 } });

interface EndpointData {
  id: string;
  status: string;
  totalWorkers: number;
  runningWorkers: number;
  domain: string | null;
}
interface TaskData {
  taskId: string;
  status: string;
  deliveryStatus: string;
  deliveryAttempts: number;
  deliveredAt: string | null;
  output: unknown;
  error: string | null;
  workerUrl: string | null;
}

async function runningEndpoint(name: string, extra: Record<string, unknown> = {}): Promise<EndpointData> {
  const endpoint = await sim.ok<EndpointData>('POST', '/v2/serverless', {
    body: endpointRequest(name, extra),
  });
  await sim.advance();
  return endpoint;
}

const summary = (id: string) =>
  sim.ok<{ status: number; domain: string | null }>('GET', `/v2/serverless/${id}`);
const full = async (id: string) =>
  (await sim.ok<EndpointData[]>('GET', '/v2/serverless')).find((endpoint) => endpoint.id === id);
const task = (endpointId: string, taskId: string) =>
  sim.ok<TaskData>('GET', `/v2/serverless/${endpointId}/tasks/${taskId}`);

describe('serverless endpoints', () => {
  it('create → INITIALIZING → RUNNING; get shows the status as its index (1 = RUNNING)', async () => {
    const endpoint = await sim.ok<EndpointData>('POST', '/v2/serverless', {
      body: endpointRequest('ep-a', { workers: 2 }),
    });
    assert.equal(endpoint.status, 'INITIALIZING');
    assert.equal((await summary(endpoint.id)).status, 0);
    await sim.advance();
    const running = await summary(endpoint.id);
    assert.equal(running.status, 1);
    assert.ok(running.domain);
    const listed = await full(endpoint.id);
    assert.deepEqual([listed?.totalWorkers, listed?.runningWorkers], [2, 2]);
  });

  it('stop → STOPPING → STOPPED with no running workers; start → INITIALIZING → RUNNING', async () => {
    const endpoint = await runningEndpoint('ep-stop');
    await sim.ok('POST', `/v2/serverless/${endpoint.id}/stop`);
    assert.equal((await summary(endpoint.id)).status, 2);
    await sim.advance();
    assert.equal((await summary(endpoint.id)).status, 3);
    assert.equal((await full(endpoint.id))?.runningWorkers, 0);
    await sim.fails(ApiCode.ResourceStatusInvalid, 'POST', `/v2/serverless/${endpoint.id}/stop`);
    await sim.ok('POST', `/v2/serverless/${endpoint.id}/start`);
    assert.equal((await summary(endpoint.id)).status, 0);
    await sim.fails(ApiCode.ResourceStatusInvalid, 'POST', `/v2/serverless/${endpoint.id}/start`);
    await sim.advance();
    assert.equal((await full(endpoint.id))?.status, 'RUNNING');
  });

  it('cost accrues per running worker at its hourly price, and stops with the endpoint', async () => {
    const endpoint = await runningEndpoint('ep-cost', { workers: 2 });
    const cost = async () =>
      (await sim.ok<Array<{ id: string; cost: string; perHourPrice: string }>>('GET', '/v2/serverless')).find(
        (e) => e.id === endpoint.id,
      );
    assert.equal((await cost())?.cost, '0.000000');
    assert.equal((await cost())?.perHourPrice, '1.9800', 'two L40S workers at 0.99 USD/hour');
    await sim.advance(3_600_000);
    assert.equal((await cost())?.cost, '1.980000');
    await sim.ok('PUT', `/v2/serverless/${endpoint.id}/workers?count=1`);
    await sim.advance(3_600_000);
    assert.equal((await cost())?.cost, '2.970000');
    await sim.ok('POST', `/v2/serverless/${endpoint.id}/stop`);
    await sim.advance(10 * 3_600_000);
    assert.equal((await cost())?.cost, '2.970000');
  });

  it('the list filters by statusList; scaling changes the workers', async () => {
    const endpoint = await runningEndpoint('ep-scale');
    await sim.ok('PUT', `/v2/serverless/${endpoint.id}/workers?count=3`);
    assert.equal((await full(endpoint.id))?.runningWorkers, 3);
    const running = await sim.ok<EndpointData[]>('GET', '/v2/serverless?statusList=RUNNING');
    assert.ok(running.some((e) => e.id === endpoint.id) && running.every((e) => e.status === 'RUNNING'));
    assert.deepEqual(await sim.ok('GET', '/v2/serverless?statusList=FAILED'), []);
    const renamed = await sim.ok<{ name: string }>('PATCH', `/v2/serverless/${endpoint.id}`, {
      body: { name: 'ep-renamed' },
    });
    assert.equal(renamed.name, 'ep-renamed');
  });

  it('moving workers to other resources is all or nothing', async () => {
    const simulator = await sim.running();
    const endpoint = await runningEndpoint('ep-move', { workers: 2 });
    const a6000 = () => simulator.capacity.describe().find((pool) => pool.gpuType === 'NVIDIA RTX A6000');
    simulator.capacity.setTotal('eu-west-1', 'NVIDIA RTX A6000', 1);
    const moved = { resources: [{ region: 'eu-west-1', gpuType: 'NVIDIA RTX A6000', gpuCount: 1 }] };
    await sim.fails(ApiCode.NoCapacity, 'PATCH', `/v2/serverless/${endpoint.id}`, { body: moved });
    assert.equal(a6000()?.used, 0);
    assert.equal((await full(endpoint.id))?.runningWorkers, 2, 'the endpoint keeps its workers');
    simulator.capacity.setTotal('eu-west-1', 'NVIDIA RTX A6000', 2);
    await sim.ok('PATCH', `/v2/serverless/${endpoint.id}`, { body: moved });
    assert.equal(a6000()?.used, 2);
    await sim.ok('DELETE', `/v2/serverless/${endpoint.id}`);
    assert.equal(a6000()?.used, 0, 'a deleted endpoint holds no GPUs');
  });

  it('after delete every endpoint operation answers 24001 and task operations 14000', async () => {
    const endpoint = await runningEndpoint('ep-gone');
    await sim.ok('DELETE', `/v2/serverless/${endpoint.id}`);
    await sim.fails(ApiCode.ServerlessNotFound, 'GET', `/v2/serverless/${endpoint.id}`);
    await sim.fails(ApiCode.ServerlessNotFound, 'DELETE', `/v2/serverless/${endpoint.id}`);
    await sim.fails(ApiCode.ServerlessNotFound, 'POST', `/v2/serverless/${endpoint.id}/start`);
    await sim.fails(ApiCode.EndpointNotFound, 'GET', `/v2/serverless/${endpoint.id}/tasks`);
    await sim.fails(ApiCode.EndpointNotFound, 'POST', `/v2/serverless/${endpoint.id}/tasks`, {
      body: { input: 1 },
    });
  });
});

describe('serverless tasks', () => {
  it('PROCESSING → DELIVERED → SUCCESS; counts by status; 24011 for an unknown task', async () => {
    const endpoint = await runningEndpoint('ep-tasks');
    const { taskId } = await sim.ok<{ taskId: string }>('POST', `/v2/serverless/${endpoint.id}/tasks`, {
      body: { taskId: 'job_1', input: { prompt: 'hi' }, workerPort: 9000, processUri: '/run' },
    });
    assert.equal(taskId, 'job_1');
    // The single worker is busy with job_1 for two steps; the second task waits.
    await sim.ok('POST', `/v2/serverless/${endpoint.id}/tasks`, { body: { taskId: 'job_2', input: 2 } });
    assert.deepEqual(await sim.ok('GET', `/v2/serverless/${endpoint.id}/tasks/count`), {
      processing: '2',
      delivered: '0',
      success: '0',
      failed: '0',
    });
    await sim.advance();
    const delivered = await task(endpoint.id, 'job_1');
    assert.equal(delivered.status, 'DELIVERED');
    assert.match(delivered.workerUrl ?? '', /:9000\/run$/);
    assert.equal((await task(endpoint.id, 'job_2')).status, 'PROCESSING');
    await sim.advance();
    const done = await task(endpoint.id, 'job_1');
    assert.equal(done.status, 'SUCCESS');
    assert.deepEqual(done.output, { echo: { prompt: 'hi' } });
    assert.equal(done.deliveryStatus, 'INIT', 'no webhook: nothing to deliver');
    await sim.advance(2 * 60_000);
    const list = await sim.ok<{ items: TaskData[]; total: string }>(
      'GET',
      `/v2/serverless/${endpoint.id}/tasks?status=SUCCESS`,
    );
    assert.deepEqual(
      list.items.map((t) => t.taskId),
      ['job_1', 'job_2'],
    );
    assert.equal(list.total, '2');
    assert.equal('input' in (list.items[0] ?? {}), false, 'the list form omits input');
    await sim.fails(ApiCode.TaskNotFound, 'GET', `/v2/serverless/${endpoint.id}/tasks/nope`);
  });

  it('tasks go only to QUEUE endpoints (10001) that are not stopped (24000); taskIds are unique', async () => {
    const alb = await runningEndpoint('ep-alb', { serviceMode: 'ALB' });
    const wrongMode = await sim.fails(ApiCode.InvalidRequest, 'POST', `/v2/serverless/${alb.id}/tasks`, {
      body: { input: 1 },
    });
    assert.match(wrongMode.body.message, /QUEUE/);
    const queue = await runningEndpoint('ep-queue');
    await sim.ok('POST', `/v2/serverless/${queue.id}/tasks`, { body: { taskId: 'dup', input: 1 } });
    await sim.fails(ApiCode.InvalidRequest, 'POST', `/v2/serverless/${queue.id}/tasks`, {
      body: { taskId: 'dup', input: 1 },
    });
    await sim.ok('POST', `/v2/serverless/${queue.id}/stop`);
    await sim.fails(ApiCode.ServerlessUnavailable, 'POST', `/v2/serverless/${queue.id}/tasks`, {
      body: { input: 1 },
    });
  });

  it('delivers the result to the webhook with X-API-Key, retrying with growing delay until it succeeds', async (t) => {
    // The receiver fails the first two attempts.
    const receiver = await startReceiver(t, (nth) => (nth <= 2 ? 503 : 200));
    const endpoint = await runningEndpoint('ep-hook');
    await sim.ok('POST', `/v2/serverless/${endpoint.id}/tasks`, {
      body: {
        taskId: 'hooked',
        input: 7,
        webhook: `${receiver.url}/results`,
        webhookAuthKey: 'receiver-secret',
      },
    });
    await sim.advance(2 * 60_000);
    await eventually(() => assert.equal(receiver.received.length, 1));
    await eventually(async () => assert.equal((await task(endpoint.id, 'hooked')).deliveryStatus, 'FAILED'));
    // Retries wait 1 s, then 2 s of simulated time: 1 s is not enough for the second retry.
    await sim.advance(1000);
    await eventually(() => assert.equal(receiver.received.length, 2));
    await eventually(async () => assert.equal((await task(endpoint.id, 'hooked')).deliveryAttempts, 2));
    await sim.advance(1000);
    assert.equal(receiver.received.length, 2);
    await sim.advance(1000);
    await eventually(() => assert.equal(receiver.received.length, 3));
    const delivered = await eventually(async () => {
      const current = await task(endpoint.id, 'hooked');
      assert.equal(current.deliveryStatus, 'SUCCESS');
      return current;
    });
    assert.equal(delivered.deliveryAttempts, 3);
    assert.match(delivered.deliveredAt ?? '', /^\d+$/);
    for (const { headers, body, path } of receiver.received) {
      assert.equal(path, '/results');
      assert.equal(headers['x-api-key'], 'receiver-secret');
      const { timestamp, ...rest } = body as Record<string, unknown>;
      assert.deepEqual(rest, {
        taskId: 'hooked',
        endpointId: endpoint.id,
        status: 'SUCCESS',
        output: { echo: 7 },
        error: null,
      });
      assert.match(String(timestamp), /^\d+$/);
    }
  });

  it('gives up after 3 retries: MAX_RETRIES_EXCEEDED after 4 attempts; the endpoint webhook is the default', async (t) => {
    const receiver = await startReceiver(t, () => 500);
    const endpoint = await runningEndpoint('ep-nohook', { webhook: `${receiver.url}/ep` });
    (await sim.running()).faults.set({ taskFailureRate: 1 });
    t.after(async () => void (await sim.running()).faults.reset());
    await sim.ok('POST', `/v2/serverless/${endpoint.id}/tasks`, { body: { taskId: 'doomed', input: null } });
    await sim.advance(2 * 60_000);
    for (let attempt = 1; attempt <= 4; attempt++) {
      await eventually(async () =>
        assert.equal((await task(endpoint.id, 'doomed')).deliveryAttempts, attempt),
      );
      await sim.advance(1000 * 2 ** (attempt - 1));
    }
    const final = await task(endpoint.id, 'doomed');
    assert.equal(final.status, 'FAILED');
    assert.match(final.error ?? '', /fail/);
    assert.equal(final.deliveryStatus, 'MAX_RETRIES_EXCEEDED');
    assert.equal(receiver.received.length, 4);
    const [first] = receiver.received;
    assert.ok(first);
    assert.equal((first.body as { status: string }).status, 'FAILED');
    assert.equal(first.path, '/ep');
    assert.equal(first.headers['x-api-key'], undefined);
  });
});
