import assert from 'node:assert/strict';
import { afterEach, test } from 'node:test';
import { DetailSchedule } from '../../src/runtime/managed-details.ts';
import { poll } from '../support/operator.ts';

let schedule: DetailSchedule | undefined;
afterEach(() => schedule?.stop());

function start(options: { callsPerSecond: number; callsPerFetch: number; intervalMs: number }) {
  const released: string[] = [];
  schedule = new DetailSchedule({ ...options, enqueue: (key) => released.push(key) });
  schedule.start();
  return { schedule, released };
}

test('each tracked key is released once per interval, and only after its fetch', async () => {
  const { schedule, released } = start({ callsPerSecond: 1000, callsPerFetch: 1, intervalMs: 50 });
  schedule.track('a');
  schedule.track('b');
  schedule.track('a');
  await poll(
    async () => released.length,
    (n) => n >= 2,
    'both released',
  );
  assert.deepEqual(released.sort(), ['a', 'b'], 'tracking twice does not double the turns');
  assert.ok(schedule.isDue('a'));
  await new Promise((resolve) => setTimeout(resolve, 120));
  assert.equal(released.length, 2, 'nothing more until fetched');
  schedule.fetched('a');
  assert.equal(schedule.isDue('a'), false);
  await poll(
    async () => released.filter((key) => key === 'a').length,
    (n) => n === 2,
    'a again an interval later',
  );
});

test('an untracked key is never released again, and re-tracking gives it one turn, not two', async () => {
  const { schedule, released } = start({ callsPerSecond: 1000, callsPerFetch: 1, intervalMs: 20 });
  schedule.track('x');
  await poll(
    async () => released.length,
    (n) => n === 1,
    'x released',
  );
  schedule.fetched('x');
  schedule.untrack('x');
  schedule.track('x');
  schedule.untrack('x');
  schedule.track('x');
  await poll(
    async () => released.length,
    (n) => n === 2,
    'x released once more',
  );
  await new Promise((resolve) => setTimeout(resolve, 100));
  assert.equal(released.length, 2, 'the voided turns stay void');
});

test('a fetch dearer than one second of budget still gets its turn', async () => {
  const { schedule, released } = start({ callsPerSecond: 20, callsPerFetch: 30, intervalMs: 1000 });
  schedule.track('pod');
  await poll(
    async () => released.length,
    (n) => n === 1,
    'released despite the cost',
    5000,
  );
});
