import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RequestLimiter } from '../../src/api/request-limiter.ts';
import { metricValue, startHarness } from '../support/api-harness.ts';
import { reply } from '../support/misbehaving-server.ts';
import { getThing, wireThing } from '../support/sample-operations.ts';

const getInput = { params: { id: '42' }, query: {}, body: undefined };

test('a full bucket lets a burst through at once, then serves waiters in arrival order', async () => {
  const bucket = new RequestLimiter({ requestsPerSecond: 200, burst: 3 });
  const order: number[] = [];

  const waits = await Promise.all(
    Array.from({ length: 8 }, async (_, i) => {
      const waited = await bucket.acquire();
      order.push(i);
      return waited;
    }),
  );

  assert.deepEqual(order, [0, 1, 2, 3, 4, 5, 6, 7]);
  assert.deepEqual(waits.slice(0, 3), [0, 0, 0]);
  assert.ok(waits.slice(3).every((waited) => waited > 0));
  assert.equal(bucket.waiting, 0);
});

test('a waiter whose signal aborts leaves the line without taking a token', async () => {
  const bucket = new RequestLimiter({ requestsPerSecond: 50, burst: 1 });
  await bucket.acquire();
  const controller = new AbortController();

  const abandoned = bucket.acquire(controller.signal);
  const next = bucket.acquire();
  assert.equal(bucket.waiting, 2);
  controller.abort(new Error('gave up'));

  await assert.rejects(abandoned, /gave up/);
  assert.equal(bucket.waiting, 1);
  await next;
  assert.equal(bucket.waiting, 0);
});

test('the server never sees more than burst + rate × window requests from one client', async (t) => {
  const rate = 20;
  const burst = 3;
  const { server, client } = await startHarness(t, { rateLimit: { requestsPerSecond: rate, burst } });
  server.script(reply.envelope(10000, wireThing));

  await Promise.all(Array.from({ length: 12 }, () => client.invoke(getThing, getInput)));

  const arrivals = server.requests.map((request) => request.receivedAt).sort((a, b) => a - b);
  assert.equal(arrivals.length, 12);
  for (let first = 0; first < arrivals.length; first++) {
    for (let last = first; last < arrivals.length; last++) {
      const windowSeconds = ((arrivals[last] ?? 0) - (arrivals[first] ?? 0)) / 1000;
      const seen = last - first + 1;
      // One token of slack absorbs loopback jitter between the limiter's grant and the arrival.
      const allowed = burst + rate * windowSeconds + 1;
      assert.ok(seen <= allowed, `${seen} requests within ${windowSeconds}s, at most ${allowed} allowed`);
    }
  }
});

test('retries take tokens too', async (t) => {
  const { server, client, registry } = await startHarness(t);
  server.script(reply.text(503, 'busy'), reply.text(503, 'busy'), reply.envelope(10000, wireThing));

  await client.invoke(getThing, getInput);

  assert.equal(server.requests.length, 3);
  const name = 'gpucloud_api_rate_limiter_wait_seconds';
  assert.equal(await metricValue(registry, name, { operation: 'things.get' }, `${name}_count`), 3);
});
