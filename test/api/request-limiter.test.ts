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

test('never grants more than burst + rate × window, whatever the window', async (t) => {
  // On the mocked clock the grants are exactly the limiter's: no loaded machine can bunch them up.
  t.mock.timers.enable({ apis: ['setTimeout', 'Date'] });
  const rate = 20;
  const burst = 3;
  const limiter = new RequestLimiter({ requestsPerSecond: rate, burst }, () => Date.now());
  const grants: number[] = [];
  const all = Promise.all(
    Array.from({ length: 12 }, () => limiter.acquire().then(() => grants.push(Date.now()))),
  );
  for (let ms = 0; ms < 1000 && grants.length < 12; ms++) {
    await Promise.resolve();
    t.mock.timers.tick(1);
  }
  await all;
  assert.equal(grants.length, 12);
  assert.deepEqual(
    grants.slice(0, burst),
    [0, 0, 0].map((offset) => grants[0] ?? offset),
  );
  for (let first = 0; first < grants.length; first++) {
    for (let last = first; last < grants.length; last++) {
      const windowSeconds = ((grants[last] ?? 0) - (grants[first] ?? 0)) / 1000;
      const seen = last - first + 1;
      const allowed = burst + rate * windowSeconds;
      assert.ok(
        seen <= allowed + 1e-9,
        `${seen} grants within ${windowSeconds}s, at most ${allowed} allowed`,
      );
    }
  }
  // And no slower than the rate: the 12th grant is due (12 - burst) / rate seconds after the first.
  assert.equal((grants[11] ?? 0) - (grants[0] ?? 0), ((12 - burst) / rate) * 1000);
});

test('retries take tokens too', async (t) => {
  const { server, client, registry } = await startHarness(t);
  server.script(reply.text(503, 'busy'), reply.text(503, 'busy'), reply.envelope(10000, wireThing));

  await client.invoke(getThing, getInput);

  assert.equal(server.requests.length, 3);
  const name = 'gpucloud_api_rate_limiter_wait_seconds';
  assert.equal(await metricValue(registry, name, { operation: 'things.get' }, `${name}_count`), 3);
});
