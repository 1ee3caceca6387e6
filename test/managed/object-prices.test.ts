import assert from 'node:assert/strict';
import { test } from 'node:test';
import { pino } from 'pino';
import { ObjectPrices } from '../../src/managed/object-prices.ts';

// What one kind's objects cost per hour, summed synchronously from prices read in the background.

interface Thing {
  id: string;
  gpus: number;
  state: string;
}

function prices(priceOf: (thing: Thing) => Promise<number | undefined>) {
  const reads: string[] = [];
  const book = new ObjectPrices<Thing>(
    {
      kind: 'Thing',
      idOf: (thing) => thing.id,
      fingerprint: (thing) => thing.state,
      heldGpus: (thing) => thing.gpus,
      priceOf: (thing) => {
        reads.push(`${thing.id}:${thing.state}`);
        return priceOf(thing);
      },
    },
    pino({ level: 'silent' }),
  );
  return { book, reads };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

test('unknown until every live object is priced, then the sum, each price read once per state', async () => {
  const { book, reads } = prices(async (thing) => thing.gpus * 2);
  const things = [
    { id: 'a', gpus: 1, state: 'RUNNING' },
    { id: 'b', gpus: 2, state: 'RUNNING' },
    { id: 'c', gpus: 0, state: 'PAUSED' },
  ];
  assert.equal(
    book.total(things, () => true),
    undefined,
  );
  await settle();
  assert.equal(
    book.total(things, () => true),
    6,
  );
  assert.equal(
    book.total(things, () => true),
    6,
  );
  assert.deepEqual(reads, ['a:RUNNING', 'b:RUNNING'], 'what holds no GPUs is neither read nor counted');
  const scaled = [{ id: 'a', gpus: 4, state: 'SCALED' }, things[1] as Thing];
  assert.equal(
    book.total(scaled, () => true),
    undefined,
    'a new state is priced again',
  );
  await settle();
  assert.equal(
    book.total(scaled, () => true),
    12,
  );
});

test('counts only what the scope keeps; an object nothing prices counts 0; a failed read is tried again', async () => {
  let fail = true;
  const { book } = prices(async (thing) => {
    if (thing.id === 'x' && fail) throw new Error('offers unavailable');
    return thing.id === 'old' ? undefined : 3;
  });
  const things = [
    { id: 'x', gpus: 1, state: 'RUNNING' },
    { id: 'y', gpus: 1, state: 'RUNNING' },
    { id: 'old', gpus: 1, state: 'RUNNING' },
  ];
  assert.equal(
    book.total(things, () => true),
    undefined,
  );
  await settle();
  fail = false;
  assert.equal(
    book.total(things, () => true),
    undefined,
    'x failed: not known yet, and read again',
  );
  await settle();
  assert.equal(
    book.total(things, () => true),
    6,
    'old counts 0',
  );
  assert.equal(
    book.total(things, (id) => id === 'y'),
    3,
  );
});
