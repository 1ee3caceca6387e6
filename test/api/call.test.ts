import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import { inspect } from 'node:util';
import { pino } from 'pino';
import { createInvoker } from '../../src/api/call.ts';
import {
  CloudApiError,
  GpuCloudError,
  RequestValidationError,
  ResponseShapeError,
  TransportError,
} from '../../src/api/errors.ts';
import { metricValue, startHarness, testApiKey } from '../support/api-harness.ts';
import { refusedPortUrl, reply } from '../support/misbehaving-server.ts';
import {
  createThing,
  deleteThing,
  getThing,
  listThings,
  newThing,
  noInput,
  wireThing,
} from '../support/sample-operations.ts';

const getInput = { params: { id: '42' }, query: {}, body: undefined };

test('a successful call sends the key and returns the data decoded to the application form', async (t) => {
  const { server, client } = await startHarness(t);
  server.script(reply.envelope(10000, wireThing));

  const thing = await client.invoke(getThing, { params: { id: 'a/b c' }, query: {}, body: undefined });

  assert.deepEqual(thing, { id: '42', name: 'alpha', createdAt: 1_700_000_000_000 });
  const [request] = server.requests;
  assert.equal(request?.method, 'GET');
  assert.equal(request?.url, '/v2/things/a%2Fb%20c');
  assert.equal(request?.headers['x-api-key'], testApiKey);
  assert.equal(request?.body, '');
});

test('the query repeats array keys, leaves out undefined, and carries the wire form', async (t) => {
  const { server, client } = await startHarness(t);
  server.script(reply.envelope(10000, [wireThing]));

  await client.invoke(listThings, {
    params: {},
    query: { statusList: ['RUNNING', 'PAUSED'] },
    body: undefined,
  });
  await client.invoke(listThings, {
    params: {},
    query: { size: 50, statusList: undefined },
    body: undefined,
  });
  await client.invoke(listThings, noInput);

  assert.deepEqual(
    server.requests.map((request) => request.url),
    ['/v2/things?statusList=RUNNING&statusList=PAUSED', '/v2/things?size=50', '/v2/things'],
  );
});

test('the body goes as JSON in wire form, and a base URL path prefix is kept', async (t) => {
  const { server } = await startHarness(t);
  const prefixed = createInvoker({ baseUrl: `${server.url}/api/`, apiKey: testApiKey });
  t.after(() => prefixed.close());
  server.script(reply.envelope(10000, wireThing));

  await prefixed.invoke(createThing, newThing);

  const [request] = server.requests;
  assert.equal(request?.url, '/api/v2/things');
  assert.equal(request?.headers['content-type'], 'application/json');
  assert.deepEqual(JSON.parse(request?.body ?? ''), { name: 'alpha', gpuCount: 2, startAt: '1700000000000' });
});

test('a business error answered with HTTP 200 is a CloudApiError decided by its code, not retried', async (t) => {
  const { server, client } = await startHarness(t);
  server.script(reply.envelope(12002, null, { message: 'no capacity in region' }));

  const error = await client.invoke(createThing, newThing).catch((e: unknown) => e);

  assert.ok(error instanceof CloudApiError);
  assert.equal(error.code, 12002);
  assert.equal(error.codeName, 'NoCapacity');
  assert.equal(error.httpStatus, 200);
  assert.equal(error.kind, 'transient');
  assert.equal(error.retryable, true);
  assert.equal(error.mayHaveTakenEffect, false);
  assert.equal(error.serviceMessage, 'no capacity in region');
  assert.match(error.message, /^things\.create: .*12002 \(NoCapacity\) "no capacity in region"/);
  assert.equal(server.requests.length, 1);
});

test('a validation failure (HTTP 400, code 10001) is terminal', async (t) => {
  const { server, client } = await startHarness(t);
  server.script(reply.envelope(10001, null, { status: 400, message: 'gpuCount must be a power of 2' }));

  const error = await client.invoke(createThing, newThing).catch((e: unknown) => e);

  assert.ok(error instanceof CloudApiError);
  assert.equal(error.codeName, 'InvalidRequest');
  assert.equal(error.terminal, true);
  assert.equal(error.retryable, false);
  assert.equal(server.requests.length, 1);
});

test('a not-found code classifies as notFound, a wrong state as conflict', async (t) => {
  const { server, client } = await startHarness(t);
  server.script(
    reply.envelope(13000, null, { message: 'pod not found' }),
    reply.envelope(12001, null, { message: 'status invalid' }),
  );
  const del = { params: { id: '7' }, query: {}, body: undefined };

  const missing = await client.invoke(deleteThing, del).catch((e: unknown) => e);
  const wrongState = await client.invoke(deleteThing, del).catch((e: unknown) => e);

  assert.ok(missing instanceof CloudApiError && wrongState instanceof CloudApiError);
  assert.deepEqual([missing.kind, wrongState.kind], ['notFound', 'conflict']);
  assert.deepEqual([missing.terminal, wrongState.terminal], [false, false]);
});

test('a 401 without an envelope is a terminal CloudApiError that points at the key', async (t) => {
  const { server, client } = await startHarness(t);
  server.script(reply.text(401, 'Unauthorized'));

  const error = await client.invoke(getThing, getInput).catch((e: unknown) => e);

  assert.ok(error instanceof CloudApiError);
  assert.equal(error.code, null);
  assert.equal(error.httpStatus, 401);
  assert.equal(error.terminal, true);
  assert.match(error.message, /Check the API key/);
  assert.equal(server.requests.length, 1);
});

test('a success status with a body that is not JSON is a ResponseShapeError', async (t) => {
  const { server, client } = await startHarness(t);
  server.script(reply.text(200, '<html>gateway</html>', 'text/html'));

  const error = await client.invoke(getThing, getInput).catch((e: unknown) => e);

  assert.ok(error instanceof ResponseShapeError);
  assert.equal(error.httpStatus, 200);
  assert.match(error.message, /^things\.get: .*not JSON/);
  assert.equal(server.requests.length, 1);
});

test('data that does not match the schema is a ResponseShapeError naming the fields', async (t) => {
  const { server, client } = await startHarness(t);
  server.script(reply.envelope(10000, { ...wireThing, name: 7, createdAt: 'yesterday' }));

  const error = await client.invoke(getThing, getInput).catch((e: unknown) => e);

  assert.ok(error instanceof ResponseShapeError);
  assert.deepEqual(error.issues.map((issue) => issue.path).sort(), ['data.createdAt', 'data.name']);
});

test('bad input is a RequestValidationError listing every field, and nothing is sent', async (t) => {
  const { server, client, registry } = await startHarness(t);

  const error = await client
    .invoke(createThing, { params: {}, query: {}, body: { name: '', gpuCount: -1, startAt: 1 } })
    .catch((e: unknown) => e);

  assert.ok(error instanceof RequestValidationError);
  assert.deepEqual(error.issues.map((issue) => issue.path).sort(), ['body.gpuCount', 'body.name']);
  assert.match(error.message, /^things\.create: invalid request, nothing was sent: .*body\.name/);
  assert.equal(error.terminal, true);
  assert.equal(server.requests.length, 0);
  assert.equal(
    await metricValue(
      registry,
      'gpucloud_api_rate_limiter_wait_seconds',
      {},
      'gpucloud_api_rate_limiter_wait_seconds_count',
    ),
    0,
  );
});

test('a path parameter that fails its codec is reported under params', async (t) => {
  const { server, client } = await startHarness(t);

  const error = await client
    .invoke(deleteThing, { params: { id: 'not-a-number' }, query: {}, body: undefined })
    .catch((e: unknown) => e);

  assert.ok(error instanceof RequestValidationError);
  assert.deepEqual(
    error.issues.map((issue) => issue.path),
    ['params.id'],
  );
  assert.equal(server.requests.length, 0);
});

test('the API key appears in no error, no log line and no metric, even when the service echoes it', async (t) => {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(chunk.toString('utf8'));
      done();
    },
  });
  const { server, client, registry } = await startHarness(t, {
    logger: pino({ level: 'debug' }, sink),
    requestTimeoutMs: 150,
    retry: { maxRetries: 0 },
  });
  server.script(
    reply.envelope(10001, null, { status: 400, message: `key ${testApiKey} is not allowed here` }),
    reply.text(401, `bad key ${testApiKey}`),
    reply.envelope(10000, { key: testApiKey }),
    reply.hang(),
  );
  const refused = createInvoker({
    baseUrl: await refusedPortUrl(),
    apiKey: testApiKey,
    retry: { maxRetries: 0 },
  });
  t.after(() => refused.close());

  const errors = [
    await client.invoke(createThing, newThing).catch((e: unknown) => e),
    await client.invoke(getThing, getInput).catch((e: unknown) => e),
    await client.invoke(getThing, getInput).catch((e: unknown) => e),
    await client.invoke(getThing, getInput).catch((e: unknown) => e),
    await client
      .invoke(createThing, { ...newThing, body: { ...newThing.body, name: '' } })
      .catch((e: unknown) => e),
    await refused.invoke(getThing, getInput).catch((e: unknown) => e),
  ];

  assert.deepEqual(
    errors.map((error) => (error instanceof GpuCloudError ? error.name : 'not a GpuCloudError')),
    [
      'CloudApiError',
      'CloudApiError',
      'ResponseShapeError',
      'TransportError',
      'RequestValidationError',
      'TransportError',
    ],
  );
  assert.ok(server.requests.every((request) => request.headers['x-api-key'] === testApiKey));
  for (const error of errors) {
    assert.ok(!inspect(error, { depth: 10 }).includes(testApiKey), `key leaked in ${inspect(error)}`);
    assert.ok(!JSON.stringify(error).includes(testApiKey));
  }
  assert.ok(lines.length >= server.requests.length, 'one debug line per attempt');
  assert.ok(lines.every((line) => !line.includes(testApiKey)));
  assert.ok(!(await registry.metrics()).includes(testApiKey));
});

test('every attempt is logged at debug with operation, status, code, duration and attempt', async (t) => {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(chunk.toString('utf8'));
      done();
    },
  });
  const { server, client } = await startHarness(t, { logger: pino({ level: 'debug' }, sink) });
  server.script(reply.text(502, 'bad gateway'), reply.envelope(10000, wireThing));

  await client.invoke(getThing, getInput);

  const records = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
  assert.deepEqual(
    records.map(({ operation, attempt, httpStatus, code, retryReason }) => ({
      operation,
      attempt,
      httpStatus,
      code,
      retryReason,
    })),
    [
      { operation: 'things.get', attempt: 1, httpStatus: 502, code: 'http_502', retryReason: 'server_error' },
      { operation: 'things.get', attempt: 2, httpStatus: 200, code: '10000', retryReason: undefined },
    ],
  );
  assert.ok(records.every((record) => record.level === 20 && typeof record.durationMs === 'number'));
});

test('metrics count requests by code, time them, and clients can share one registry', async (t) => {
  const { server, client, registry } = await startHarness(t);
  const second = createInvoker({ baseUrl: server.url, apiKey: testApiKey, metrics: registry });
  t.after(() => second.close());
  server.script(
    reply.envelope(10000, wireThing),
    reply.envelope(14000, null),
    reply.envelope(10000, wireThing),
  );

  await client.invoke(getThing, getInput);
  await client.invoke(getThing, getInput).catch(() => {});
  await second.invoke(getThing, getInput);

  const requests = (code: string) =>
    metricValue(registry, 'gpucloud_api_requests_total', { operation: 'things.get', code });
  assert.equal(await requests('10000'), 2);
  assert.equal(await requests('14000'), 1);
  const count = (name: string) => metricValue(registry, name, { operation: 'things.get' }, `${name}_count`);
  assert.equal(await count('gpucloud_api_request_duration_seconds'), 3);
  assert.equal(await count('gpucloud_api_rate_limiter_wait_seconds'), 3);
});

test('calls still waiting when the client closes fail with a closed TransportError', async (t) => {
  const { server, client } = await startHarness(t, {
    retry: { maxRetries: 3, baseDelayMs: 60_000, maxDelayMs: 60_000, maxRetryAfterMs: 60_000 },
  });
  server.script(reply.rateLimited(30));

  const pending = client.invoke(getThing, getInput).catch((e: unknown) => e);
  await server.waitFor((requests) => requests.length === 1);
  await client.close();
  const error = await pending;

  assert.ok(error instanceof TransportError);
  assert.equal(error.reason, 'closed');
  assert.equal(error.attempts, 1);
  assert.equal(error.retryable, false);
  assert.equal(error.mayHaveTakenEffect, false);
  assert.equal(server.requests.length, 1);
});

test('invalid options are refused with a message naming them, never the key', () => {
  assert.throws(
    () => createInvoker({ baseUrl: 'ftp://example', apiKey: testApiKey, connections: 0 }),
    (error: unknown) =>
      error instanceof TypeError &&
      /baseUrl/.test(error.message) &&
      /connections/.test(error.message) &&
      !error.message.includes(testApiKey),
  );
  assert.throws(() => createInvoker({ baseUrl: 'http://127.0.0.1:1', apiKey: '' }), /apiKey/);
});
