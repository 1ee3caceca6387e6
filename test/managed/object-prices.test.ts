import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ObjectPrices } from '../../src/managed/accounts/object-prices.ts';
import { captureLogs } from '../support/log-capture.ts';

// What one kind's objects cost per hour, summed synchronously from prices read in the background.

interface Thing {
  id: string;
  gpus: number;
  state: string;
}

function prices(priceOf: (thing: Thing) => Promise<number | undefined>) {
  const reads: string[] = [];
  const logs = captureLogs('info');
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
    logs.logger,
  );
  /** The warnings an operator reads: which object, and why its price is missing. */
  const warnings = () =>
    logs.lines
      .filter((line) => line.level === 'warn')
      .map(({ kind, id, msg, err }) => ({
        kind,
        id,
        msg,
        ...(err !== undefined && { err: (err as { message: string }).message }),
      }));
  return { book, reads, warnings };
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
  const { book, warnings } = prices(async (thing) => {
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
  assert.deepEqual(warnings(), [
    {
      kind: 'Thing',
      id: 'x',
      msg: 'reading a price failed; read again on the next check',
      err: 'offers unavailable',
    },
    { kind: 'Thing', id: 'old', msg: 'no price for a live object; budgets count it at 0' },
  ]);
});

test('a price is read once at a time, however often the sum is asked for meanwhile', async () => {
  let answer: (perHour: number) => void = () => {};
  const { book, reads } = prices(() => new Promise((resolve) => (answer = resolve)));
  const things = [{ id: 'a', gpus: 1, state: 'RUNNING' }];
  for (let ask = 0; ask < 3; ask++)
    assert.equal(
      book.total(things, () => true),
      undefined,
    );
  answer(5);
  await settle();
  assert.equal(
    book.total(things, () => true),
    5,
  );
  assert.deepEqual(reads, ['a:RUNNING']);
});

test('what stops holding GPUs is forgotten: when it holds them again, its price is read again', async () => {
  let perHour = 2;
  const { book, reads } = prices(async () => perHour);
  const running = [{ id: 'a', gpus: 1, state: 'RUNNING' }];
  book.total(running, () => true);
  await settle();
  assert.equal(
    book.total(running, () => true),
    2,
  );
  // Paused, it holds none; resumed (on another machine, at today's price), it is the same state again.
  assert.equal(
    book.total([{ id: 'a', gpus: 0, state: 'PAUSED' }], () => true),
    0,
  );
  perHour = 3;
  assert.equal(
    book.total(running, () => true),
    undefined,
    'not the price it had before its pause',
  );
  await settle();
  assert.equal(
    book.total(running, () => true),
    3,
  );
  assert.deepEqual(reads, ['a:RUNNING', 'a:RUNNING']);
});
