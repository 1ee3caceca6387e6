import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SimClock } from '../../src/sim/clock.ts';
import { Scheduler } from '../../src/sim/scheduler.ts';

test('an action scheduled by a step run during an advance still runs on time after it', async () => {
  const clock = new SimClock();
  const scheduler = new Scheduler(clock, (error) => {
    throw error;
  });
  try {
    const ran: string[] = [];
    // A step that schedules another far ahead (as a pod reaching TERMINATED schedules its removal).
    scheduler.after(10, () => {
      ran.push('first');
      scheduler.after(300_000, () => ran.push('removal'));
    });
    scheduler.advance(300_000);
    assert.deepEqual(ran, ['first']);
    // Now a step due in 20 ms of real time must not wait behind a timer armed mid-advance.
    scheduler.after(20, () => ran.push('soon'));
    const deadline = Date.now() + 2_000;
    while (!ran.includes('soon') && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 10));
    assert.deepEqual(ran, ['first', 'removal', 'soon'], 'both on time: the removal 10 ms after the advance');
  } finally {
    scheduler.stop();
  }
});
