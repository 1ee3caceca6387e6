import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { setImmediate as tick } from 'node:timers/promises';
import { ItemExponentialFailureRateLimiter } from '../../src/controller/queue-rate-limiters.ts';
import { ONGOING_RUN, WorkQueue, type WorkQueueObserver } from '../../src/controller/work-queue.ts';

function pendingTimers(): number {
  return process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length;
}

describe('WorkQueue', () => {
  test('queues a key once however often it is added, first in first out', async () => {
    const queue = new WorkQueue();
    for (const key of ['a', 'b', 'a', 'c', 'b', 'a']) queue.add(key);
    assert.equal(queue.length, 3);
    assert.deepEqual([await queue.get(), await queue.get(), await queue.get()], ['a', 'b', 'c']);
    queue.shutdown();
  });

  test('holds back a key added while it is processed until done, then hands it out once', async () => {
    const queue = new WorkQueue();
    queue.add('a');
    const key = await queue.get();
    assert.equal(key, 'a');
    queue.add('a');
    queue.add('a');
    assert.equal(queue.length, 0, 'a key being processed is not queued again');
    let second: string | undefined;
    const waiting = queue.get().then((k) => {
      second = k;
    });
    await tick();
    assert.equal(second, undefined, 'no worker may get the key while another holds it');
    queue.done('a');
    await waiting;
    assert.equal(second, 'a');
    queue.done('a');
    assert.equal(queue.length, 0);
    queue.shutdown();
  });

  test('never lets two workers process one key at once', async () => {
    const queue = new WorkQueue();
    const inFlight = new Set<string>();
    const processed = new Map<string, number>();
    let overlaps = 0;
    let maxParallel = 0;
    const worker = async () => {
      for (let key = await queue.get(); key !== undefined; key = await queue.get()) {
        if (inFlight.has(key)) overlaps++;
        inFlight.add(key);
        maxParallel = Math.max(maxParallel, inFlight.size);
        await tick();
        // Re-adding during processing, as a watch event would.
        if ((processed.get(key) ?? 0) < 5) queue.add(key);
        await tick();
        processed.set(key, (processed.get(key) ?? 0) + 1);
        inFlight.delete(key);
        queue.done(key);
      }
    };
    const workers = Array.from({ length: 4 }, worker);
    for (let round = 0; round < 3; round++) for (const key of ['a', 'b', 'c', 'd', 'e', 'f']) queue.add(key);
    while ([...processed.values()].reduce((sum, n) => sum + n, 0) < 36 || queue.length > 0) await tick();
    await queue.shutdownWithDrain();
    await Promise.all(workers);
    assert.equal(overlaps, 0);
    assert.ok(maxParallel > 1, 'different keys are processed in parallel');
    assert.deepEqual([...processed.values()], [6, 6, 6, 6, 6, 6]);
  });

  test('addAfter releases keys in order of due time and keeps the earlier time of a repeated key', async () => {
    const queue = new WorkQueue();
    queue.addAfter('c', 60);
    queue.addAfter('a', 20);
    queue.addAfter('b', 40);
    queue.addAfter('x', 60_000);
    queue.addAfter('x', 30);
    queue.addAfter('b', 60_000);
    const order = [];
    for (let i = 0; i < 4; i++) order.push(await queue.get());
    assert.deepEqual(order, ['a', 'x', 'b', 'c']);
    queue.shutdown();
  });

  test('drives all delayed keys with a single timer', async () => {
    const queue = new WorkQueue();
    const before = pendingTimers();
    for (let i = 0; i < 10_000; i++) queue.addAfter(`k${i}`, 1 + ((i * 7919) % 50));
    assert.ok(
      pendingTimers() - before <= 1,
      `expected at most one new timer, saw ${pendingTimers() - before}`,
    );
    const seen = new Set<string>();
    while (seen.size < 10_000) {
      const key = await queue.get();
      assert.ok(key !== undefined);
      seen.add(key);
      queue.done(key);
    }
    queue.shutdown();
    assert.equal(pendingTimers(), before);
  });

  test('addRateLimited delays by the limiter and counts retries until forget', async () => {
    const retried: string[] = [];
    const observer: WorkQueueObserver = {
      added() {},
      started() {},
      finished() {},
      retried: (key) => retried.push(key),
    };
    const queue = new WorkQueue({ rateLimiter: new ItemExponentialFailureRateLimiter(1, 1000), observer });
    for (let attempt = 1; attempt <= 3; attempt++) {
      queue.addRateLimited('a');
      assert.equal(await queue.get(), 'a');
      queue.done('a');
      assert.equal(queue.retries('a'), attempt);
    }
    queue.forget('a');
    assert.equal(queue.retries('a'), 0);
    assert.deepEqual(retried, ['a', 'a', 'a']);
    queue.shutdown();
  });

  test('shutdownWithDrain stops handing out work and waits for work in progress', async () => {
    const queue = new WorkQueue();
    queue.add('a');
    queue.add('b');
    queue.addAfter('c', 10);
    assert.equal(await queue.get(), 'a');
    let drained = false;
    const draining = queue.shutdownWithDrain().then(() => {
      drained = true;
    });
    assert.equal(await queue.get(), undefined, 'queued work is not started after shutdown');
    queue.add('d');
    assert.equal(queue.length, 0, 'adds are refused after shutdown');
    await tick();
    assert.equal(drained, false, 'drain waits for the key in progress');
    queue.done('a');
    await draining;
    assert.equal(drained, true);
  });

  test('shutdown wakes idle workers', async () => {
    const queue = new WorkQueue();
    const waiting = Promise.all([queue.get(), queue.get()]);
    queue.shutdown();
    assert.deepEqual(await waiting, [undefined, undefined]);
    await queue.shutdownWithDrain();
  });

  test('reports the key life cycle to its observer', async () => {
    const calls: string[] = [];
    const observer: WorkQueueObserver = {
      added: (key) => calls.push(`added ${key}`),
      started: (key) => calls.push(`started ${key}`),
      finished: (key) => calls.push(`finished ${key}`),
      retried: (key) => calls.push(`retried ${key}`),
    };
    const queue = new WorkQueue({ observer });
    queue.add('a');
    queue.add('a');
    const key = await queue.get();
    queue.add('a');
    queue.done(key ?? '');
    assert.deepEqual(calls, ['added a', 'started a', 'finished a', 'added a']);
    queue.shutdown();
  });

  test('hands out ongoing keys before new ones, each lane first in first out', async () => {
    const queue = new WorkQueue();
    for (const key of ['a', 'b', 'c']) queue.add(key, 'new');
    queue.add('x');
    queue.add('y', 'ongoing');
    assert.equal(queue.length, 5);
    const order = [];
    for (let i = 0; i < 5; i++) order.push(await queue.get());
    assert.deepEqual(order, ['x', 'y', 'a', 'b', 'c']);
    queue.shutdown();
  });

  test(`hands out a waiting new key after ${ONGOING_RUN} ongoing ones in a row, however many more wait`, async () => {
    const queue = new WorkQueue();
    queue.add('new-1', 'new');
    queue.add('new-2', 'new');
    for (let i = 0; i < 3 * ONGOING_RUN; i++) queue.add(`k${i}`);
    const order: (string | undefined)[] = [];
    for (let i = 0; i < 3 * ONGOING_RUN + 2; i++) order.push(await queue.get());
    assert.equal(order.indexOf('new-1'), ONGOING_RUN);
    assert.equal(order.indexOf('new-2'), 2 * ONGOING_RUN + 1);
    assert.deepEqual(
      order.filter((key) => key?.startsWith('k')),
      Array.from({ length: 3 * ONGOING_RUN }, (_, i) => `k${i}`),
    );
    queue.shutdown();
  });

  test('counts the ongoing run only while a new key waits', async () => {
    const queue = new WorkQueue();
    for (let i = 0; i < 3 * ONGOING_RUN; i++) queue.add(`k${i}`);
    for (let i = 0; i < 2 * ONGOING_RUN; i++) await queue.get();
    queue.add('new', 'new');
    const order: (string | undefined)[] = [];
    for (let i = 0; i <= ONGOING_RUN; i++) order.push(await queue.get());
    assert.equal(
      order.indexOf('new'),
      ONGOING_RUN,
      'the ongoing keys handed out before it arrived do not count',
    );
    queue.shutdown();
  });

  test('a key added while it is handled comes back ongoing, though its add said new', async () => {
    const queue = new WorkQueue();
    queue.add('a', 'new');
    queue.add('b', 'new');
    const first = await queue.get();
    assert.equal(first, 'a');
    queue.add('a', 'new');
    queue.done('a');
    assert.equal(await queue.get(), 'a', 'the object is no longer new: it goes before b');
    assert.equal(await queue.get(), 'b');
    queue.shutdown();
  });

  test('a worker waiting on an empty queue gets a new key at once', async () => {
    const queue = new WorkQueue();
    const waiting = queue.get();
    queue.add('a', 'new');
    assert.equal(await waiting, 'a');
    queue.shutdown();
  });
});
