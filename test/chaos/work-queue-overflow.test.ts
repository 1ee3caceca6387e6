import assert from 'node:assert/strict';
import { test } from 'node:test';
import { WorkQueue } from '../../src/controller/work-queue.ts';

// Found by the chaos suite (bad-input): a requeue further off than a Node timer can wait (a create
// intent dated in the year 2286) made the queue arm an overflowing timer, which Node fires after 1 ms —
// and the queue re-armed it, thousands of times a second, each with a warning on stderr.
test('a work queue asked to wait longer than a timer can arms no overflowing timer', async () => {
  const warnings: string[] = [];
  const onWarning = (warning: Error) => warnings.push(warning.name);
  process.on('warning', onWarning);
  const queue = new WorkQueue();
  try {
    queue.addAfter('far', 2 ** 40);
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.deepEqual(warnings, []);
    assert.equal(queue.length, 0, 'the key is not released early');
  } finally {
    process.off('warning', onWarning);
    await queue.shutdownWithDrain();
  }
});
