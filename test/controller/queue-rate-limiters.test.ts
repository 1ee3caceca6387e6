import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  BucketRateLimiter,
  defaultControllerRateLimiter,
  ItemExponentialFailureRateLimiter,
  MaxOfRateLimiter,
} from '../../src/controller/queue-rate-limiters.ts';

function manualClock(start = 0) {
  let now = start;
  return { now: () => now, advance: (ms: number) => (now += ms) };
}

describe('ItemExponentialFailureRateLimiter', () => {
  test('doubles per failure from the base delay up to the cap', () => {
    const limiter = new ItemExponentialFailureRateLimiter(5, 1000);
    const delays = Array.from({ length: 10 }, () => limiter.when('a'));
    assert.deepEqual(delays, [5, 10, 20, 40, 80, 160, 320, 640, 1000, 1000]);
    assert.equal(limiter.retries('a'), 10);
  });

  test('keeps each key apart and starts over after forget', () => {
    const limiter = new ItemExponentialFailureRateLimiter(5, 1000);
    limiter.when('a');
    limiter.when('a');
    assert.equal(limiter.when('b'), 5);
    limiter.forget('a');
    assert.equal(limiter.retries('a'), 0);
    assert.equal(limiter.when('a'), 5);
  });

  test('stays at the cap after very many failures', () => {
    const limiter = new ItemExponentialFailureRateLimiter(5, 1_000_000);
    let last = 0;
    for (let i = 0; i < 2000; i++) last = limiter.when('a');
    assert.equal(last, 1_000_000);
  });
});

describe('MaxOfRateLimiter', () => {
  test('applies the overall budget across keys even when per-key backoff is short', () => {
    const clock = manualClock();
    const limiter = new MaxOfRateLimiter(
      new ItemExponentialFailureRateLimiter(5, 1000),
      new BucketRateLimiter(10, 3, clock.now),
    );
    const delays = ['a', 'b', 'c', 'd', 'e'].map((key) => limiter.when(key));
    assert.deepEqual(delays, [5, 5, 5, 100, 200]);
  });

  test('lets per-key backoff dominate when the budget is ample, and forgets on every limiter', () => {
    const limiter = new MaxOfRateLimiter(
      new ItemExponentialFailureRateLimiter(5, 1000),
      new BucketRateLimiter(1000, 1000),
    );
    for (let i = 0; i < 5; i++) limiter.when('a');
    assert.equal(limiter.when('a'), 160);
    assert.equal(limiter.retries('a'), 6);
    limiter.forget('a');
    assert.equal(limiter.when('a'), 5);
  });

  test('the controller default starts at 5 ms per key', () => {
    const limiter = defaultControllerRateLimiter();
    assert.equal(limiter.when('a'), 5);
    assert.equal(limiter.when('a'), 10);
  });
});
