import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { DetailSchedule } from '../../src/managed/detail-schedule.ts';

async function waitFor(check: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

function schedule(released: string[]) {
  return new DetailSchedule({
    callsPerSecond: 100,
    callsPerFetch: 1,
    intervalMs: 3_600_000,
    enqueue: (key) => released.push(key),
  });
}

test('a resource tracked after another was fetched gets its details without waiting an interval', async () => {
  const released: string[] = [];
  const details = schedule(released);
  details.start();
  try {
    details.track('ns/first');
    await waitFor(() => released.includes('ns/first'), 'the first release');
    assert.equal(details.isDue('ns/first'), true);
    details.fetched('ns/first', { runtimeSeconds: 5 });
    assert.equal(details.isDue('ns/first'), false);
    assert.deepEqual(details.last('ns/first'), { runtimeSeconds: 5 }, 'what the fetch returned is kept');
    details.track('ns/second');
    await waitFor(() => released.includes('ns/second'), 'the second release');
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
    await waitFor(() => released.includes('ns/kept'), 'the kept release');
    assert.deepEqual(released, ['ns/kept']);
    details.track('ns/gone');
    await waitFor(() => released.includes('ns/gone'), 'the re-tracked release');
  } finally {
    details.stop();
  }
});
