import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Registry } from 'prom-client';
import { createInvoker } from '../../src/api/call.ts';
import { CloudApiError, TransportError } from '../../src/api/errors.ts';
import { metricValue, startHarness, testApiKey } from '../support/api-harness.ts';
import { refusedPortUrl, reply } from '../support/misbehaving-server.ts';
import { createThing, deleteThing, getThing, newThing, wireThing } from '../support/sample-operations.ts';

const getInput = { params: { id: '42' }, query: {}, body: undefined };
const ok = reply.envelope(10000, wireThing);
const serverError = reply.envelope(10002, null, { status: 500, message: 'system error' });

test('a 5xx is retried until the call succeeds, and the retry is counted', async (t) => {
  const { server, client, registry } = await startHarness(t);
  server.script(serverError, reply.text(503, 'upstream down'), ok);

  const thing = await client.invoke(getThing, getInput);

  assert.equal(thing.id, '42');
  assert.equal(server.requests.length, 3);
  assert.equal(await metricValue(registry, 'gpucloud_api_retries_total', { reason: 'server_error' }), 2);
  assert.equal(await metricValue(registry, 'gpucloud_api_requests_total', { code: '10002' }), 1);
  assert.equal(await metricValue(registry, 'gpucloud_api_requests_total', { code: 'http_503' }), 1);
  assert.equal(await metricValue(registry, 'gpucloud_api_requests_total', { code: '10000' }), 1);
});

test('attempts are bounded: a service that keeps failing yields a retryable CloudApiError', async (t) => {
  const { server, client } = await startHarness(t, {
    retry: { maxRetries: 2, baseDelayMs: 1, maxDelayMs: 2 },
  });
  server.script(serverError);

  const error = await client.invoke(getThing, getInput).catch((e: unknown) => e);

  assert.ok(error instanceof CloudApiError);
  assert.equal(error.code, 10002);
  assert.equal(error.httpStatus, 500);
  assert.equal(error.attempts, 3);
  assert.equal(error.retryable, true);
  assert.equal(server.requests.length, 3);
});

test('a 429 is retried no sooner than its Retry-After', async (t) => {
  const { server, client, registry } = await startHarness(t);
  server.script(reply.rateLimited(1), ok);

  await client.invoke(getThing, getInput);

  const [limited, retried] = server.requests;
  assert.ok(limited?.answeredAt !== undefined && retried !== undefined);
  // Timers have millisecond granularity; the gap is measured from the end of the 429 answer.
  assert.ok(
    retried.receivedAt - limited.answeredAt >= 995,
    `retried ${retried.receivedAt - limited.answeredAt} ms after the 429`,
  );
  assert.equal(await metricValue(registry, 'gpucloud_api_retries_total', { reason: 'rate_limited' }), 1);
});

test('a Retry-After longer than the cap fails the call at once, handing the wait to the caller', async (t) => {
  const { server, client } = await startHarness(t, {
    retry: { maxRetries: 3, baseDelayMs: 1, maxDelayMs: 5, maxRetryAfterMs: 5_000 },
  });
  server.script(reply.rateLimited(60), ok);

  const error = await client.invoke(getThing, getInput).catch((e: unknown) => e);

  assert.ok(error instanceof CloudApiError);
  assert.equal(error.httpStatus, 429);
  assert.equal(error.retryAfterMs, 60_000);
  assert.equal(error.retryable, true);
  assert.equal(error.mayHaveTakenEffect, false);
  assert.equal(server.requests.length, 1);
});

test('a request without an answer is aborted at the timeout and retried', async (t) => {
  const { server, client, registry } = await startHarness(t, { requestTimeoutMs: 150 });
  server.script(reply.hang(), ok);

  const thing = await client.invoke(getThing, getInput);

  assert.equal(thing.name, 'alpha');
  assert.equal(server.requests.length, 2);
  await server.waitFor((requests) => requests[0]?.abandonedByClient === true);
  assert.equal(await metricValue(registry, 'gpucloud_api_requests_total', { code: 'timeout' }), 1);
  assert.equal(await metricValue(registry, 'gpucloud_api_retries_total', { reason: 'timeout' }), 1);
});

test('a connection dropped in the middle of the answer is retried', async (t) => {
  const { server, client, registry } = await startHarness(t);
  server.script(reply.dropMidResponse(), ok);

  const thing = await client.invoke(getThing, getInput);

  assert.equal(thing.createdAt, 1_700_000_000_000);
  assert.equal(server.requests.length, 2);
  assert.equal(await metricValue(registry, 'gpucloud_api_retries_total', { reason: 'network' }), 1);
});

test('an idempotent delete is retried after a 5xx even though it reached the service', async (t) => {
  const { server, client } = await startHarness(t);
  server.script(serverError, reply.envelope(10000, null));

  assert.equal(await client.invoke(deleteThing, { params: { id: '7' }, query: {}, body: undefined }), null);
  assert.equal(server.requests.length, 2);
  assert.deepEqual(
    server.requests.map((request) => `${request.method} ${request.url}`),
    ['DELETE /v2/things/7', 'DELETE /v2/things/7'],
  );
});

test('a create answered 500 is not retried, and the error says to look before creating again', async (t) => {
  const { server, client } = await startHarness(t);
  server.script(serverError, ok);

  const error = await client.invoke(createThing, newThing).catch((e: unknown) => e);

  assert.ok(error instanceof CloudApiError);
  assert.equal(server.requests.length, 1);
  assert.equal(error.mayHaveTakenEffect, true);
  assert.match(error.message, /^things\.create: .*look the resource up before creating it again/);
});

test('a create that times out is not retried', async (t) => {
  const { server, client } = await startHarness(t, { requestTimeoutMs: 150 });
  server.script(reply.hang(), ok);

  const error = await client.invoke(createThing, newThing).catch((e: unknown) => e);

  assert.ok(error instanceof TransportError);
  assert.equal(error.reason, 'timeout');
  assert.equal(error.mayHaveTakenEffect, true);
  assert.equal(server.requests.length, 1);
});

test('a create whose connection drops after sending is not retried', async (t) => {
  const { server, client } = await startHarness(t);
  server.script(reply.dropMidResponse(), ok);

  const error = await client.invoke(createThing, newThing).catch((e: unknown) => e);

  assert.ok(error instanceof TransportError);
  assert.equal(error.reason, 'network');
  assert.equal(error.mayHaveTakenEffect, true);
  assert.equal(server.requests.length, 1);
});

test('a create answered 429 is retried: the service did not process it', async (t) => {
  const { server, client } = await startHarness(t);
  server.script(reply.rateLimited(0), ok);

  const thing = await client.invoke(createThing, newThing);

  assert.equal(thing.id, '42');
  assert.equal(server.requests.length, 2);
  assert.equal(server.requests[0]?.body, server.requests[1]?.body);
});

test('a create whose connection is refused is retried, and the error says nothing was sent', async (t) => {
  const registry = new Registry();
  const client = createInvoker({
    baseUrl: await refusedPortUrl(),
    apiKey: testApiKey,
    retry: { maxRetries: 2, baseDelayMs: 1, maxDelayMs: 2 },
    metrics: registry,
  });
  t.after(() => client.close());

  const error = await client.invoke(createThing, newThing).catch((e: unknown) => e);

  assert.ok(error instanceof TransportError);
  assert.equal(error.attempts, 3);
  assert.equal(error.mayHaveTakenEffect, false);
  assert.match(error.message, /ECONNREFUSED/);
  assert.doesNotMatch(error.message, /look the resource up/);
  assert.equal(await metricValue(registry, 'gpucloud_api_retries_total', { reason: 'network' }), 2);
  assert.equal(await metricValue(registry, 'gpucloud_api_requests_total', { code: 'network' }), 3);
});

test('calls reuse kept-alive connections instead of opening one per request', async (t) => {
  const { server, client } = await startHarness(t, { connections: 2 });
  server.script(ok);

  for (let i = 0; i < 6; i++) await client.invoke(getThing, getInput);

  assert.equal(server.requests.length, 6);
  assert.ok(new Set(server.requests.map((request) => request.connection)).size <= 2);
});
