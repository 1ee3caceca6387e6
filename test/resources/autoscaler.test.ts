import assert from 'node:assert/strict';
import { test } from 'node:test';
import { QueueAutoscaler } from '../../src/resources/serverless-endpoint/autoscaler.ts';

// The queue autoscaler's decisions on a clock the test moves: up at once, down only after a whole
// window of lower recommendations, nothing within the tolerance band.
const spec = { minWorkers: 0, maxWorkers: 5, targetQueuePerWorker: 4, scaleDownDelaySeconds: 60 };

function clock() {
  let now = 1_000_000;
  return { now: () => now, advance: (s: number) => (now += s * 1000) };
}

test('scales up at once to ceil(queue / target), capped at maxWorkers', () => {
  const time = clock();
  const scaler = new QueueAutoscaler(time);
  assert.deepEqual(scaler.decide('e', spec, 0, 9), { desiredWorkers: 3, reason: 'ScaleUp', queue: 9 });
  assert.deepEqual(scaler.decide('e', spec, 3, 100), { desiredWorkers: 5, reason: 'ScaleUp', queue: 100 });
  assert.deepEqual(scaler.decide('e', spec, 5, 100), { desiredWorkers: 5, reason: 'AtMaximum', queue: 100 });
});

test('within 10% of the target per worker, the count stands', () => {
  const scaler = new QueueAutoscaler(clock());
  // 3 workers at 4 each is 12; 13 is within 10%, and ceil(13/4) = 4 would have scaled up.
  assert.equal(scaler.decide('e', spec, 3, 13).desiredWorkers, 3);
  assert.equal(scaler.decide('e', spec, 3, 13).reason, 'Steady');
  // 14 is not.
  assert.equal(scaler.decide('e', spec, 3, 14).desiredWorkers, 4);
});

test('scales down only when a whole window recommended it, and to the highest recommendation of it', () => {
  const time = clock();
  const scaler = new QueueAutoscaler(time);
  assert.equal(scaler.decide('e', spec, 0, 16).desiredWorkers, 4);
  time.advance(10);
  // The queue drains: fewer workers are recommended, but not for a whole window yet.
  assert.deepEqual(scaler.decide('e', spec, 4, 0), {
    desiredWorkers: 4,
    reason: 'ScaleDownDelayed',
    queue: 0,
  });
  time.advance(30);
  assert.equal(scaler.decide('e', spec, 4, 5).reason, 'ScaleDownDelayed');
  time.advance(25);
  // 65 s after the last 4: the window holds 0 and 2 (ceil(5/4)); down to the highest, 2.
  assert.deepEqual(scaler.decide('e', spec, 4, 0), { desiredWorkers: 2, reason: 'ScaleDown', queue: 0 });
  time.advance(61);
  assert.deepEqual(scaler.decide('e', spec, 2, 0), { desiredWorkers: 0, reason: 'ScaleDown', queue: 0 });
});

test('a queue that dips and comes back never flaps the workers', () => {
  const time = clock();
  const scaler = new QueueAutoscaler(time);
  let workers = scaler.decide('e', spec, 0, 12).desiredWorkers;
  const seen = [workers];
  for (let step = 0; step < 60; step++) {
    time.advance(5);
    // Every 5 s the queue swings between 12 and 3: recommendations 3 and 1.
    workers = scaler.decide('e', spec, workers, step % 2 === 0 ? 3 : 12).desiredWorkers;
    seen.push(workers);
  }
  assert.deepEqual([...new Set(seen)], [3], 'never scaled down while the queue kept coming back');
});

test('a new process does not scale down before it has watched a whole window', () => {
  const time = clock();
  const scaler = new QueueAutoscaler(time);
  assert.equal(scaler.decide('e', spec, 4, 0).reason, 'ScaleDownDelayed');
  time.advance(59);
  assert.equal(scaler.decide('e', spec, 4, 0).reason, 'ScaleDownDelayed');
  time.advance(2);
  assert.equal(scaler.decide('e', spec, 4, 0).desiredWorkers, 0);
});

test('minWorkers holds, and a maxWorkers lowered below the count acts at once', () => {
  const time = clock();
  const scaler = new QueueAutoscaler(time);
  const floor = { ...spec, minWorkers: 1 };
  assert.deepEqual(scaler.decide('f', floor, 1, 0), { desiredWorkers: 1, reason: 'AtMinimum', queue: 0 });
  assert.deepEqual(scaler.decide('f', { ...spec, maxWorkers: 2 }, 4, 40), {
    desiredWorkers: 2,
    reason: 'AboveMaximum',
    queue: 40,
  });
});
