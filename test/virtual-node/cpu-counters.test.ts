import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CpuCounters } from '../../src/virtual-node/cpu-counters.ts';

// The cumulative CPU time made from the cloud's usage rates: it only grows, and what a reader takes as
// the rate between two reads is the latest rate.
test('a counter starts as if its rate held since the start, and grows at the latest rate', () => {
  const counters = new CpuCounters();
  const start = 1_000_000;
  // Half a core for 10 s before the first read: 5 core-seconds.
  assert.equal(counters.read('p', 500_000_000, start, start + 10_000), 5e9);
  // Two cores for the next 2 s: 4 more core-seconds, whatever the rate was before.
  assert.equal(counters.read('p', 2e9, start, start + 12_000), 9e9);
  // Read again at the same instant, or at an earlier one: never less.
  assert.equal(counters.read('p', 0, start, start + 12_000), 9e9);
  assert.equal(counters.read('p', 1e9, start, start + 11_000), 9e9);
  assert.equal(counters.read('p', 1e9, start, start + 13_000), 10e9);
});

test('a container that went is forgotten; seen again, it starts again', () => {
  const counters = new CpuCounters();
  counters.read('gone', 1e9, 0, 1_000);
  counters.read('kept', 1e9, 0, 1_000);
  counters.keepOnly(new Set(['kept']));
  assert.equal(counters.read('kept', 1e9, 0, 2_000), 2e9);
  assert.equal(counters.read('gone', 1e9, 1_500, 2_000), 0.5e9);
});
