import assert from 'node:assert/strict';
import { test } from 'node:test';
import { IndexedMinHeap } from '../../src/lib/min-heap.ts';

function drain<K>(heap: IndexedMinHeap<K>): K[] {
  const out: K[] = [];
  for (let key = heap.pop(); key !== undefined; key = heap.pop()) out.push(key);
  return out;
}

test('pops keys by ascending priority, equal priorities in insertion order', () => {
  const heap = new IndexedMinHeap<string>();
  const priorities = [5, 3, 9, 3, 1, 7, 5, 0, 3];
  for (const [i, priority] of priorities.entries()) heap.set(`k${i}`, priority);
  assert.deepEqual(drain(heap), ['k7', 'k4', 'k1', 'k3', 'k8', 'k0', 'k6', 'k5', 'k2']);
});

test('moves a key when its priority changes, in either direction', () => {
  const heap = new IndexedMinHeap<string>();
  for (let i = 0; i < 100; i++) heap.set(`k${i}`, i);
  heap.set('k99', -1);
  heap.set('k0', 1000);
  assert.equal(heap.size, 100);
  assert.equal(heap.priorityOf('k99'), -1);
  const order = drain(heap);
  assert.equal(order[0], 'k99');
  assert.equal(order.at(-1), 'k0');
  assert.equal(heap.priorityOf('k0'), undefined);
});

test('stays ordered under many random operations', () => {
  const heap = new IndexedMinHeap<number>();
  const expected = new Map<number, number>();
  for (let i = 0; i < 5000; i++) {
    const key = Math.floor(Math.random() * 500);
    const priority = Math.floor(Math.random() * 10_000);
    heap.set(key, priority);
    expected.set(key, priority);
  }
  const popped: number[] = [];
  for (let key = heap.pop(); key !== undefined; key = heap.pop())
    popped.push(expected.get(key) ?? Number.NaN);
  assert.equal(popped.length, expected.size);
  assert.deepEqual(
    popped,
    [...popped].sort((a, b) => a - b),
  );
});

test('deletes a key from anywhere, and the rest still come out in order', () => {
  const heap = new IndexedMinHeap<number>();
  const expected = new Map<number, number>();
  // A seeded walk: deletes from the top, the middle and the last slot, among sets.
  let seed = 7;
  const next = () => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed;
  };
  for (let i = 0; i < 5000; i++) {
    const key = next() % 300;
    if (next() % 3 === 0) {
      assert.equal(heap.delete(key), expected.delete(key));
    } else {
      const priority = next() % 1000;
      heap.set(key, priority);
      expected.set(key, priority);
    }
    assert.equal(heap.size, expected.size);
  }
  assert.equal(heap.delete(-1), false);
  const order = drain(heap);
  const want = [...expected.entries()].sort((a, b) => a[1] - b[1]).map(([key]) => key);
  assert.deepEqual(
    order.map((key) => expected.get(key)),
    want.map((key) => expected.get(key)),
  );
  assert.deepEqual(new Set(order), new Set(expected.keys()));
});
