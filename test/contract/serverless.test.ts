import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { ApiCode } from '../../src/api/codes.ts';
import type { EndpointCreateRequest } from '../../src/api/schemas/index.ts';
import { eventually } from '../support/eventually.ts';
import {
  collect,
  itExercisedEveryOperation,
  MISSING_ID,
  rejectsLocally,
  rejectsWithCode,
  useContract,
} from './harness.ts';

const env = useContract();

async function aResource() {
  const { items } = await env.client.pods.searchGpus({ isSpot: false, gpuCounts: [1] });
  const offer = items.find((item) => item.gpuCountOptions.some((option) => option.available));
  assert.ok(offer, 'an available single-GPU machine');
  return { region: offer.region, gpuType: offer.gpuType, gpuCount: 1 };
}

async function newEndpoint(name: string, overrides: Partial<EndpointCreateRequest> = {}) {
  return env.client.serverless.create({
    name,
    image: 'sdxl:1',
    resources: [await aResource()],
    workers: 1,
    ...overrides,
  });
}

async function runningEndpoint(name: string, overrides: Partial<EndpointCreateRequest> = {}) {
  const endpoint = await newEndpoint(name, overrides);
  env.step();
  assert.equal((await env.client.serverless.get(endpoint.id)).status, 'RUNNING');
  return endpoint;
}

interface Delivery {
  readonly headers: IncomingHttpHeaders;
  readonly body: unknown;
}

/** A loopback webhook receiver that records what it is sent; closed by the caller. */
async function webhookReceiver() {
  const deliveries: Delivery[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      deliveries.push({ headers: request.headers, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) });
      response.end();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/results`,
    deliveries,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe('serverless endpoints against the simulator', () => {
  it('create answers the full endpoint INITIALIZING in QUEUE mode; one step later RUNNING with a domain', async () => {
    const endpoint = await newEndpoint('sdxl', { envVars: [{ key: 'MODE', value: 'fast' }] });
    assert.match(endpoint.id, /^\d+$/);
    assert.equal(endpoint.status, 'INITIALIZING');
    assert.equal(endpoint.serviceMode, 'QUEUE');
    assert.equal(endpoint.totalWorkers, 1);
    assert.deepEqual(endpoint.environmentVars, [{ key: 'MODE', value: 'fast' }]);
    assert.deepEqual(await env.client.serverless.get(endpoint.id), {
      id: endpoint.id,
      name: 'sdxl',
      status: 'INITIALIZING',
      domain: null,
    });
    env.step();
    const running = await env.client.serverless.get(endpoint.id);
    assert.equal(running.status, 'RUNNING');
    assert.equal(typeof running.domain, 'string');
  });

  it('list filters by status', async () => {
    const endpoint = await runningEndpoint('listed');
    const running = await env.client.serverless.list({ statusList: ['RUNNING'] });
    assert.ok(running.some((item) => item.id === endpoint.id));
    assert.ok(running.every((item) => item.status === 'RUNNING'));
    const stopped = await env.client.serverless.list({ statusList: ['STOPPED', 'FAILED'] });
    assert.ok(stopped.every((item) => item.id !== endpoint.id));
    assert.ok((await env.client.serverless.list()).some((item) => item.id === endpoint.id));
  });

  it('update changes the endpoint and answers the reduced object; scaleWorkers sets the worker count', async () => {
    const endpoint = await runningEndpoint('tunable');
    const updated = await env.client.serverless.update(endpoint.id, { name: 'tuned', workers: 2 });
    assert.deepEqual(updated, { id: endpoint.id, name: 'tuned', status: 'RUNNING', domain: updated.domain });
    const listed = (await env.client.serverless.list()).find((item) => item.id === endpoint.id);
    assert.equal(listed?.name, 'tuned');
    assert.equal(listed?.totalWorkers, 2);

    await env.client.serverless.scaleWorkers(endpoint.id, 0);
    const scaled = (await env.client.serverless.list()).find((item) => item.id === endpoint.id);
    assert.equal(scaled?.totalWorkers, 0);
    assert.equal(scaled?.runningWorkers, 0);
  });

  it('stop: STOPPING → STOPPED with no workers; start: INITIALIZING → RUNNING; wrong state is 12001', async () => {
    const endpoint = await runningEndpoint('switchable');
    const wrongState = { code: ApiCode.ResourceStatusInvalid, kind: 'conflict' } as const;
    await rejectsWithCode(env.client.serverless.start(endpoint.id), wrongState);
    await env.client.serverless.stop(endpoint.id);
    assert.equal((await env.client.serverless.get(endpoint.id)).status, 'STOPPING');
    env.step();
    assert.equal((await env.client.serverless.get(endpoint.id)).status, 'STOPPED');
    const stopped = (await env.client.serverless.list()).find((item) => item.id === endpoint.id);
    assert.equal(stopped?.runningWorkers, 0);
    await rejectsWithCode(env.client.serverless.stop(endpoint.id), wrongState);
    await rejectsWithCode(env.client.serverless.tasks.submit(endpoint.id, { input: {} }), {
      code: ApiCode.ServerlessUnavailable,
      kind: 'transient',
    });
    await env.client.serverless.start(endpoint.id);
    assert.equal((await env.client.serverless.get(endpoint.id)).status, 'INITIALIZING');
    env.step();
    assert.equal((await env.client.serverless.get(endpoint.id)).status, 'RUNNING');
  });

  it('tasks: PROCESSING → DELIVERED → SUCCESS, counted by status, with the output', async () => {
    const endpoint = await runningEndpoint('queue');
    const { taskId } = await env.client.serverless.tasks.submit(endpoint.id, {
      taskId: 'job_1',
      input: { prompt: 'a cat' },
      workerPort: 9000,
      processUri: '/run',
    });
    assert.equal(taskId, 'job_1');
    const fresh = await env.client.serverless.tasks.get(endpoint.id, taskId);
    assert.equal(fresh.status, 'PROCESSING');
    assert.deepEqual(fresh.input, { prompt: 'a cat' });
    assert.equal(fresh.endpointId, endpoint.id);
    assert.equal((await env.client.serverless.tasks.count(endpoint.id)).processing, 1);

    env.step();
    const delivered = await env.client.serverless.tasks.get(endpoint.id, taskId);
    assert.equal(delivered.status, 'DELIVERED');
    assert.match(delivered.workerUrl ?? '', /:9000\/run$/);
    env.step();
    const done = await env.client.serverless.tasks.get(endpoint.id, taskId);
    assert.equal(done.status, 'SUCCESS');
    assert.notEqual(done.output, null);
    const counts = await env.client.serverless.tasks.count(endpoint.id);
    assert.equal(counts.success, 1);
    assert.equal(counts.processing, 0);
  });

  it('tasks: a generated taskId when none is given; a repeated one is 10001', async () => {
    const endpoint = await runningEndpoint('ids');
    const { taskId } = await env.client.serverless.tasks.submit(endpoint.id, { input: 1 });
    assert.match(taskId, /^[A-Za-z0-9_]+$/);
    await env.client.serverless.tasks.submit(endpoint.id, { taskId: 'same', input: 1 });
    await rejectsWithCode(env.client.serverless.tasks.submit(endpoint.id, { taskId: 'same', input: 2 }), {
      code: ApiCode.InvalidRequest,
    });
  });

  it('tasks: list pages and filters by status', async () => {
    const endpoint = await runningEndpoint('paged');
    await env.client.serverless.scaleWorkers(endpoint.id, 0);
    for (const n of [1, 2, 3])
      await env.client.serverless.tasks.submit(endpoint.id, { taskId: `t${n}`, input: n });
    const first = await env.client.serverless.tasks.list(endpoint.id, { page: 1, size: 2 });
    assert.deepEqual([first.page, first.size, first.total, first.pages], [1, 2, 3, 2]);
    assert.deepEqual(
      first.items.map((task) => task.taskId),
      ['t1', 't2'],
    );
    const all = await collect(env.client.serverless.tasks.listAll(endpoint.id, {}, { pageSize: 2 }));
    assert.deepEqual(
      all.map((task) => task.taskId),
      ['t1', 't2', 't3'],
    );
    const done = await env.client.serverless.tasks.list(endpoint.id, { status: 'SUCCESS' });
    assert.deepEqual(done.items, []);
  });

  it('task results go to the webhook with its key as X-API-Key; delivery is tracked on the task', async (t) => {
    const receiver = await webhookReceiver();
    t.after(() => receiver.close());
    const endpoint = await runningEndpoint('hooked');
    const { taskId } = await env.client.serverless.tasks.submit(endpoint.id, {
      input: { n: 1 },
      webhook: receiver.url,
      webhookAuthKey: 'hook-secret',
    });
    env.step(2);
    await eventually(async () => {
      const task = await env.client.serverless.tasks.get(endpoint.id, taskId);
      assert.equal(task.deliveryStatus, 'SUCCESS');
      assert.equal(task.deliveryAttempts, 1);
      assert.equal(typeof task.deliveredAt, 'number');
    });
    assert.equal(receiver.deliveries.length, 1);
    const [delivery] = receiver.deliveries;
    assert.ok(delivery);
    assert.equal(delivery.headers['x-api-key'], 'hook-secret');
    assert.deepEqual(delivery.body, {
      taskId,
      endpointId: endpoint.id,
      status: 'SUCCESS',
      output: (await env.client.serverless.tasks.get(endpoint.id, taskId)).output,
      error: null,
      timestamp: (delivery.body as { timestamp: string }).timestamp,
    });
    assert.match((delivery.body as { timestamp: string }).timestamp, /^\d+$/);
  });

  it('tasks go only to QUEUE endpoints (10001)', async () => {
    const endpoint = await runningEndpoint('balanced', { serviceMode: 'ALB' });
    await rejectsWithCode(env.client.serverless.tasks.submit(endpoint.id, { input: {} }), {
      code: ApiCode.InvalidRequest,
      message: /QUEUE/,
    });
  });

  it('after delete the endpoint does not exist (24001) and its tasks are gone (14000)', async () => {
    const endpoint = await runningEndpoint('doomed');
    await env.client.serverless.tasks.submit(endpoint.id, { taskId: 'orphan', input: {} });
    await env.client.serverless.delete(endpoint.id);
    const gone = { code: ApiCode.ServerlessNotFound, kind: 'notFound' } as const;
    await rejectsWithCode(env.client.serverless.get(endpoint.id), gone);
    await rejectsWithCode(env.client.serverless.delete(endpoint.id), gone);
    await rejectsWithCode(env.client.serverless.tasks.get(endpoint.id, 'orphan'), {
      code: ApiCode.EndpointNotFound,
    });
  });

  it('unknown ids: endpoint calls 24001, task calls 14000, an unknown task 24011', async () => {
    const { serverless } = env.client;
    const gone = { code: ApiCode.ServerlessNotFound } as const;
    await rejectsWithCode(serverless.get(MISSING_ID), gone);
    await rejectsWithCode(serverless.update(MISSING_ID, { workers: 1 }), gone);
    await rejectsWithCode(serverless.start(MISSING_ID), gone);
    await rejectsWithCode(serverless.stop(MISSING_ID), gone);
    await rejectsWithCode(serverless.scaleWorkers(MISSING_ID, 1), gone);
    const noEndpoint = { code: ApiCode.EndpointNotFound } as const;
    await rejectsWithCode(serverless.tasks.submit(MISSING_ID, { input: {} }), noEndpoint);
    await rejectsWithCode(serverless.tasks.list(MISSING_ID), noEndpoint);
    await rejectsWithCode(serverless.tasks.count(MISSING_ID), noEndpoint);
    const endpoint = await runningEndpoint('lookup');
    await rejectsWithCode(serverless.tasks.get(endpoint.id, 'never_submitted'), {
      code: ApiCode.TaskNotFound,
      kind: 'notFound',
    });
  });

  it('another organisation neither sees nor touches the endpoint or its tasks', async () => {
    const endpoint = await runningEndpoint('ours');
    await rejectsWithCode(env.stranger.serverless.get(endpoint.id), { code: ApiCode.ServerlessNotFound });
    await rejectsWithCode(env.stranger.serverless.stop(endpoint.id), { code: ApiCode.ServerlessNotFound });
    await rejectsWithCode(env.stranger.serverless.tasks.submit(endpoint.id, { input: {} }), {
      code: ApiCode.EndpointNotFound,
    });
    assert.ok((await env.stranger.serverless.list()).every((item) => item.id !== endpoint.id));
    assert.equal((await env.client.serverless.get(endpoint.id)).status, 'RUNNING');
  });

  it('bad input is refused by the client before sending, and by the service (400, 10001)', async () => {
    const resource = await aResource();
    const before = env.callsOf('serverless.create');
    await rejectsLocally(
      env.client.serverless.create({ name: '9lives', image: 'i', resources: [resource] }),
      'body.name',
      /start with a letter/,
    );
    await rejectsLocally(
      env.client.serverless.tasks.submit('1', { taskId: 'a-b', input: {} }),
      'body.taskId',
      /A-Z a-z 0-9 _/,
    );
    await rejectsLocally(env.client.serverless.scaleWorkers('1', -1), 'query.count', /negative/);
    assert.equal(env.callsOf('serverless.create'), before, 'nothing was sent');

    const raw = await env.raw('POST', '/v2/serverless', {
      body: { name: 'x'.repeat(21), image: 'i', resources: [resource] },
    });
    assert.equal(raw.status, 400);
    assert.equal(raw.envelope.code, ApiCode.InvalidRequest);
    const badPort = await env.raw('POST', `/v2/serverless/${MISSING_ID}/tasks`, {
      body: { input: {}, workerPort: 70000 },
    });
    assert.equal(badPort.status, 400);
    assert.match(badPort.envelope.message ?? '', /workerPort/);
  });

  it('every serverless operation requires a known API key (HTTP 401)', async () => {
    const unknown = env.clientWithKey('not-a-key');
    await rejectsWithCode(unknown.serverless.list(), { code: ApiCode.InvalidRequest, httpStatus: 401 });
    await rejectsWithCode(unknown.serverless.tasks.count('1'), {
      code: ApiCode.InvalidRequest,
      httpStatus: 401,
    });
  });

  itExercisedEveryOperation(env, 'serverless');
});
