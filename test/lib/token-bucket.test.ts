import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { TokenBucket } from '../../src/lib/token-bucket.ts';

function manualClock(start = 0) {
  let now = start;
  return { now: () => now, advance: (ms: number) => (now += ms) };
}

describe('TokenBucket', () => {
  test('serves the burst at once, then spaces reservations by the rate', () => {
    const clock = manualClock();
    const bucket = new TokenBucket(10, 2, clock.now);
    assert.deepEqual(
      [bucket.reserve(), bucket.reserve(), bucket.reserve(), bucket.reserve()],
      [0, 0, 100, 200],
    );
    clock.advance(300);
    assert.equal(bucket.reserve(), 0);
  });

  test('tryTake refuses when empty and recovers with time', () => {
    const clock = manualClock();
    const bucket = new TokenBucket(1, 1, clock.now);
    assert.equal(bucket.tryTake(), true);
    assert.equal(bucket.tryTake(), false);
    clock.advance(1000);
    assert.equal(bucket.tryTake(), true);
  });

  test('takes several tokens at once, and says when they will be there', () => {
    const clock = manualClock();
    const bucket = new TokenBucket(2, 4, clock.now, 0);
    assert.equal(bucket.msUntil(3), 1500, 'starts empty when asked to');
    assert.equal(bucket.tryTake(3), false);
    clock.advance(1500);
    assert.equal(bucket.msUntil(3), 0);
    assert.equal(bucket.tryTake(3), true);
    clock.advance(60_000);
    assert.equal(bucket.tryTake(5), false, 'never holds more than its burst');
    assert.equal(bucket.tryTake(4), true);
  });

  test('rejects a rate or burst that cannot work', () => {
    assert.throws(() => new TokenBucket(0, 1), RangeError);
    assert.throws(() => new TokenBucket(1, 0), RangeError);
  });
});
