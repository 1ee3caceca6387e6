import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import { systemClock } from '../../src/lib/clock.ts';
import { DetailSchedule } from '../../src/managed/cloud-cache/detail-schedule.ts';

// The details budget, driven precisely: Date and setInterval are mocked; the schedule ticks every 250 ms.

const INTERVAL = 10_000;

function world(t: TestContext, callsPerSecond: number, callsPerFetch: number) {
  t.mock.timers.enable({ apis: ['setInterval', 'Date'], now: 1_000_000 });
  const released: string[] = [];
  const details = new DetailSchedule({
    callsPerSecond,
    callsPerFetch,
    intervalMs: INTERVAL,
    enqueue: (key) => released.push(key),
    clock: systemClock,
  });
  t.after(() => details.stop());
  let offset = 0;
  const at = (to: number) => {
    t.mock.timers.tick(to - offset);
    offset = to;
  };
  return { details, released, at };
}

test('fetches are released at the rate the budget pays for, starting from an empty budget', (t) => {
  const { details, released, at } = world(t, 4, 1);
  for (const key of ['a', 'b', 'c', 'd', 'e', 'f']) details.track(key);
  details.start();
  at(249);
  assert.equal(released.length, 0);
  at(250);
  assert.equal(released.length, 1);
  at(1000);
  assert.equal(released.length, 4);
  assert.equal(new Set(released).size, 4, 'each key once');
});

test('unused budget piles up to one second of calls, no more', (t) => {
  const { details, released, at } = world(t, 4, 1);
  details.start();
  at(5000);
  for (const key of ['a', 'b', 'c', 'd', 'e', 'f']) details.track(key);
  at(5250);
  assert.equal(released.length, 4);
});

test('a fetch dearer than a second of budget is still paid for, once enough has piled up', (t) => {
  const { details, released, at } = world(t, 1, 3);
  details.track('a');
  details.track('b');
  details.start();
  at(2750);
  assert.deepEqual(released, []);
  at(3000);
  assert.equal(released.length, 1);
  at(5750);
  assert.equal(released.length, 1);
  at(6000);
  assert.equal(released.length, 2);
});

test('details known already are first fetched at a random point of the interval; tracking again changes nothing', (t) => {
  const { details, released, at } = world(t, 100, 1);
  t.mock.method(Math, 'random', () => 0.5);
  details.track('known', true);
  details.track('known');
  details.start();
  at(4750);
  assert.deepEqual(released, []);
  assert.equal(details.isDue('known'), false);
  at(5000);
  assert.deepEqual(released, ['known']);
  assert.equal(details.isDue('known'), true);
});

test('a fetch schedules the next one an interval later, and a failed fetch keeps the last values', (t) => {
  const { details, released, at } = world(t, 100, 1);
  details.track('a');
  details.start();
  at(250);
  assert.deepEqual(released, ['a']);
  details.fetched('a', { runtimeSeconds: 1 });
  assert.equal(details.isDue('a'), false);
  assert.deepEqual(details.last('a'), { runtimeSeconds: 1 });
  details.fetched('a', { runtimeSeconds: 99 });
  assert.deepEqual(details.last('a'), { runtimeSeconds: 1 }, 'a fetch nobody released is ignored');
  at(250 + INTERVAL - 250);
  assert.deepEqual(released, ['a']);
  at(250 + INTERVAL);
  assert.deepEqual(released, ['a', 'a']);
  details.fetched('a', undefined);
  assert.deepEqual(details.last('a'), { runtimeSeconds: 1 });
  assert.equal(details.isDue('a'), false);
  at(250 + 2 * INTERVAL);
  assert.deepEqual(released, ['a', 'a', 'a'], 'a failed fetch waits an interval too');
});

test('an untracked key spends no budget: its turn goes to the next key', (t) => {
  const { details, released, at } = world(t, 4, 1);
  details.track('gone');
  details.track('kept');
  details.untrack('gone');
  details.start();
  at(250);
  assert.deepEqual(released, ['kept']);
});

test('untracking a released key makes it not due and forgets its values', (t) => {
  const { details, released, at } = world(t, 100, 1);
  details.track('a');
  details.start();
  at(250);
  details.fetched('a', { runtimeSeconds: 1 });
  at(250 + INTERVAL);
  assert.equal(details.isDue('a'), true);
  details.untrack('a');
  assert.equal(details.isDue('a'), false);
  assert.equal(details.last('a'), undefined);
  details.fetched('a', { runtimeSeconds: 2 });
  assert.equal(details.last('a'), undefined, 'a fetch that ends after untrack is dropped');
  at(250 + 3 * INTERVAL);
  assert.deepEqual(released, ['a', 'a']);
});

test('a stopped schedule releases nothing', (t) => {
  const { details, released, at } = world(t, 100, 1);
  details.track('a');
  details.start();
  details.stop();
  at(1000);
  assert.deepEqual(released, []);
});
