import assert from 'node:assert/strict';
import { test } from 'node:test';
import { systemClock } from '../../src/lib/clock.ts';
import { DetailSchedule } from '../../src/managed/cloud-cache/detail-schedule.ts';
import { until } from '../support/until.ts';

function schedule(released: string[]) {
  return new DetailSchedule({
    callsPerSecond: 100,
    callsPerFetch: 1,
    intervalMs: 3_600_000,
    enqueue: (key) => released.push(key),
    clock: systemClock,
  });
}

test('a resource tracked after another was fetched gets its details without waiting an interval', async () => {
  const released: string[] = [];
  const details = schedule(released);
  details.start();
  try {
    details.track('ns/first');
    await until(() => released.includes('ns/first'), 'the first release');
    assert.equal(details.isDue('ns/first'), true);
    details.fetched('ns/first', { runtimeSeconds: 5 });
    assert.equal(details.isDue('ns/first'), false);
    assert.deepEqual(details.last('ns/first'), { runtimeSeconds: 5 }, 'what the fetch returned is kept');
    details.track('ns/second');
    await until(() => released.includes('ns/second'), 'the second release');
    assert.deepEqual(released, ['ns/first', 'ns/second'], 'the first is not due again for an interval');
    details.untrack('ns/first');
    assert.equal(details.last('ns/first'), undefined, 'an untracked key keeps nothing');
  } finally {
    details.stop();
  }
});

test('an untracked resource is never released, and tracking it again gives it a turn', async () => {
  const released: string[] = [];
  const details = schedule(released);
  details.track('ns/gone');
  details.untrack('ns/gone');
  details.track('ns/kept');
  details.start();
  try {
    await until(() => released.includes('ns/kept'), 'the kept release');
    assert.deepEqual(released, ['ns/kept']);
    details.track('ns/gone');
    await until(() => released.includes('ns/gone'), 'the re-tracked release');
  } finally {
    details.stop();
  }
});
