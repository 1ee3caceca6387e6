import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { type TestContext, test } from 'node:test';
import { systemClock } from '../../src/lib/clock.ts';
import { createLogger } from '../../src/lib/logger.ts';
import { CloudCache, type CloudLister } from '../../src/managed/cloud-cache/cloud-cache.ts';

// The cache's timing, driven precisely: Date and setTimeout are mocked, and a fake cloud of our own
// interface answers lists and gets. Intervals: a list every 1000 ms, early refreshes 100 ms apart. A timer
// of 0 ms fires 1 ms later, as Node's does: a list asked for at once starts at the next millisecond.

const T0 = 1_000_000;
const INTERVAL = 1000;
const MIN = 100;

interface Widget {
  id: string;
  phase: string;
  /** Changes the fingerprint without changing the phase. */
  rev: number;
  /** Set by enrich: what only a get carries. */
  full?: boolean;
}

interface Deferred<T> {
  promise: Promise<T>;
  resolve(value: T): void;
  reject(error: Error): void;
}

function deferred<T>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (error: Error) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** An in-memory cloud: lists answer what it holds now, unless a gate or a failure is set. */
class FakeCloud {
  readonly objects = new Map<string, Widget>();
  lists = 0;
  readonly listTimes: number[] = [];
  readonly gets: string[] = [];
  readonly enriched: string[] = [];
  listGate: Deferred<void> | undefined;
  listFailures = 0;
  getGate: Deferred<void> | undefined;
  getError: Error | undefined;
  /** Runs as a list starts, in its millisecond. */
  onList: (() => void) | undefined;

  put(id: string, phase: string, rev = 0): Widget {
    const widget = { id, phase, rev };
    this.objects.set(id, widget);
    return widget;
  }

  lister(withEnrich: boolean): CloudLister<Widget> {
    const base: CloudLister<Widget> = {
      kind: 'Widget',
      list: async () => {
        this.lists += 1;
        this.listTimes.push(Date.now() - T0);
        this.onList?.();
        // What the cloud held when the list started.
        const listed = [...this.objects.values()].map((widget) => ({ ...widget }));
        const gate = this.listGate;
        if (gate) await gate.promise;
        if (this.listFailures > 0) {
          this.listFailures -= 1;
          throw new Error('list failed');
        }
        return listed;
      },
      get: async (id) => {
        this.gets.push(id);
        const gate = this.getGate;
        if (gate) await gate.promise;
        if (this.getError) throw this.getError;
        const widget = this.objects.get(id);
        return widget && { ...widget, full: true };
      },
      idOf: (widget) => widget.id,
      fingerprint: (widget) => `${widget.phase}/${widget.rev}`,
      phaseOf: (widget) => widget.phase,
    };
    if (!withEnrich) return base;
    return {
      ...base,
      enrich: async (widget) => {
        this.enriched.push(widget.id);
        const now = this.objects.get(widget.id) ?? widget;
        return { ...now, full: true };
      },
    };
  }
}

const log = createLogger({ destination: new Writable({ write: (_c, _e, done) => done() }) });

/** Lets the promise chains of the cache settle (setImmediate is not mocked). */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

function world(t: TestContext, options: { enrich?: boolean } = {}) {
  t.mock.timers.enable({ apis: ['setTimeout', 'Date'], now: T0 });
  const cloud = new FakeCloud();
  const changes: string[] = [];
  const cache = new CloudCache(cloud.lister(options.enrich ?? false), {
    intervalMs: INTERVAL,
    minIntervalMs: MIN,
    onChange: (id) => changes.push(id),
    clock: systemClock,
    log,
  });
  t.after(() => cache.stop());
  let offset = 0;
  /** Moves the clock to `to` ms after T0, one millisecond at a time, letting the cache run in between. */
  const at = async (to: number) => {
    await settle();
    while (offset < to) {
      t.mock.timers.tick(1);
      offset += 1;
      await settle();
    }
  };
  return { cloud, cache, changes, at, now: () => Date.now() - T0 };
}

test('the first list starts at once and the next ones an interval apart', async (t) => {
  const { cloud, cache, at } = world(t);
  cloud.put('a', 'RUNNING');
  assert.equal(cache.hasSynced(), false);
  assert.equal(cache.sight('a', 0).kind, 'unknown', 'no list yet: nothing is known absent or seen');
  cache.start();
  await at(1);
  assert.deepEqual(cloud.listTimes, [1]);
  assert.equal(cache.hasSynced(), true);
  await at(INTERVAL);
  assert.deepEqual(cloud.listTimes, [1]);
  await at(3 * INTERVAL + 1);
  assert.deepEqual(cloud.listTimes, [1, 1001, 2001, 3001]);
});

test('a requested refresh waits for the minimum interval after the last list, then the interval resumes', async (t) => {
  const { cloud, cache, at } = world(t);
  cache.start();
  await at(30);
  cache.requestRefresh();
  await at(100);
  assert.deepEqual(cloud.listTimes, [1]);
  await at(101);
  assert.deepEqual(cloud.listTimes, [1, 101], 'the minimum interval after the list at 1');
  await at(1100);
  assert.deepEqual(cloud.listTimes, [1, 101], 'the steady interval counts from the early list');
  await at(1101);
  assert.deepEqual(cloud.listTimes, [1, 101, 1101]);
  await at(1601);
  cache.requestRefresh();
  await at(1602);
  assert.deepEqual(cloud.listTimes, [1, 101, 1101, 1602], 'long after: at once');
});

test('requests during a running list share one list, started the minimum interval after it ends', async (t) => {
  const { cloud, cache, at } = world(t);
  cloud.listGate = deferred();
  const gate = cloud.listGate;
  cache.start();
  await at(10);
  for (let i = 0; i < 5; i += 1) cache.requestRefresh();
  await at(250);
  assert.deepEqual(cloud.listTimes, [1], 'no list starts while one runs');
  cloud.listGate = undefined;
  gate.resolve();
  await at(349);
  assert.deepEqual(cloud.listTimes, [1]);
  await at(350);
  assert.deepEqual(cloud.listTimes, [1, 350]);
  await at(1349);
  assert.deepEqual(cloud.listTimes, [1, 350]);
  await at(1350);
  assert.deepEqual(cloud.listTimes, [1, 350, 1350], 'nothing pending: the interval');
});

test('waitForListAfter resolves only for a list that started at or after the moment, and at once if one did', async (t) => {
  const { cloud, cache, at } = world(t);
  cloud.listGate = deferred();
  const first = cloud.listGate;
  cache.start();
  await at(5);
  let done = false;
  const waited = cache.waitForListAfter(T0 + 5).then(() => {
    done = true;
  });
  cloud.listGate = deferred();
  const second = cloud.listGate;
  first.resolve();
  await at(50);
  assert.equal(done, false, 'the list that started before the moment does not count');
  assert.equal(cache.listedSince(T0 + 1), true);
  assert.equal(cache.listedSince(T0 + 2), false);
  await at(104);
  assert.deepEqual(cloud.listTimes, [1]);
  await at(105);
  assert.deepEqual(cloud.listTimes, [1, 105], 'the waiter asked for a list');
  second.resolve();
  await waited;
  assert.equal(done, true);
  assert.equal(cache.listedSince(T0 + 105), true);
  cloud.listGate = undefined;
  let immediate = false;
  await cache.waitForListAfter(T0 + 105).then(() => {
    immediate = true;
  });
  assert.equal(immediate, true);
  await at(1104);
  assert.deepEqual(cloud.listTimes, [1, 105], 'a satisfied wait asks for no list');
});

test('a list started in the same millisecond as the moment satisfies a waiter', async (t) => {
  const { cache, at } = world(t);
  await at(20);
  cache.start();
  const waited = cache.waitForListAfter(T0 + 21);
  await at(21);
  await waited;
  assert.equal(cache.listedSince(T0 + 21), true);
  assert.equal(cache.listedSince(T0 + 22), false);
});

test('stopping releases the waiters and ends the lists; later calls neither wait nor list', async (t) => {
  const { cloud, cache, at } = world(t);
  cache.start();
  await at(10);
  cloud.put('x', 'A');
  let released = false;
  const waited = cache.waitForListAfter(T0 + 10).then(() => {
    released = true;
  });
  cache.stop();
  await waited;
  assert.equal(released, true);
  await cache.waitForListAfter(T0 + 10_000);
  cache.requestRefresh();
  cache.hint('x', 'B');
  await at(3 * INTERVAL);
  assert.deepEqual(cloud.listTimes, [1]);
  assert.deepEqual(cloud.gets, []);
});

test('sight: seen from a list at or after the moment, absent only when such a list lacks the id', async (t) => {
  const { cloud, cache, at } = world(t);
  cloud.put('a', 'RUNNING');
  await at(7);
  cache.start();
  await at(8);
  const seen = cache.sight('a', T0 + 8);
  assert.equal(seen.kind, 'seen');
  assert.deepEqual(seen.kind === 'seen' && seen.cloud, { id: 'a', phase: 'RUNNING', rev: 0 });
  assert.equal(cache.sight('a', T0 + 9).kind, 'unknown');
  assert.equal(cache.sight('b', T0 + 8).kind, 'absent');
  assert.equal(cache.sight('b', T0 + 9).kind, 'unknown');
  assert.equal(cache.has('a'), true);
  assert.equal(cache.has('b'), false);
  assert.equal(cache.size, 1);
  assert.deepEqual(cache.objects(), [{ id: 'a', phase: 'RUNNING', rev: 0 }]);
});

test('lists report changed, new and gone ids only, and an unchanged object keeps its copy', async (t) => {
  const { cloud, cache, changes, at } = world(t);
  cloud.put('same', 'RUNNING');
  cloud.put('moving', 'RUNNING');
  cloud.put('leaving', 'RUNNING');
  cache.start();
  await at(1);
  assert.deepEqual(changes.sort(), ['leaving', 'moving', 'same']);
  changes.length = 0;
  const before = cache.sight('same', 0);
  cloud.put('moving', 'RUNNING', 1);
  cloud.objects.delete('leaving');
  cloud.put('arriving', 'PENDING');
  await at(1001);
  assert.deepEqual(changes.sort(), ['arriving', 'leaving', 'moving']);
  const after = cache.sight('same', T0 + 1001);
  assert.equal(after.kind, 'seen', 'the unchanged object counts as seen by the new list');
  assert.equal(before.kind === 'seen' && after.kind === 'seen' && before.cloud === after.cloud, true);
  const moved = cache.sight('moving', 0);
  assert.equal(moved.kind === 'seen' && moved.cloud.rev, 1);
  assert.equal(cache.sight('leaving', T0 + 1001).kind, 'absent');
  assert.equal(cache.size, 3);
});

test('a failing list keeps the view, releases no waiter and backs off doubling up to the interval', async (t) => {
  const { cloud, cache, changes, at } = world(t);
  cloud.put('kept', 'RUNNING');
  cache.start();
  await at(1);
  changes.length = 0;
  cloud.objects.clear();
  cloud.listFailures = 5;
  await at(1001);
  let released = false;
  void cache.waitForListAfter(T0 + 1001).then(() => {
    released = true;
  });
  await at(1101);
  assert.equal(released, false);
  assert.equal(cache.sight('kept', 0).kind, 'seen');
  assert.deepEqual(changes, []);
  assert.equal(cache.listedSince(T0 + 2), false);
  await at(1501);
  assert.equal(released, true);
  // While the waiter pends each failed list is followed by another after the minimum interval.
  assert.deepEqual(cloud.listTimes, [1, 1001, 1101, 1201, 1301, 1401, 1501]);
  assert.deepEqual(changes, ['kept']);
});

test('with nobody waiting, failed lists are retried after 2, 4, 8 minimum intervals, capped at the interval', async (t) => {
  const { cloud, cache, at } = world(t);
  cloud.listFailures = 5;
  cache.start();
  await at(4401);
  assert.deepEqual(cloud.listTimes, [1, 201, 601, 1401, 2401, 3401, 4401]);
});

test('what a reconciler remembers is seen at once, outlives the list already running, not a later one', async (t) => {
  const { cloud, cache, changes, at } = world(t);
  cloud.put('a', 'RUNNING');
  cache.start();
  await at(0);
  cloud.listGate = deferred();
  const gate = cloud.listGate;
  await at(INTERVAL);
  await at(INTERVAL + 10);
  cache.remember({ id: 'a', phase: 'PAUSED', rev: 0 });
  cache.remember({ id: 'new', phase: 'PENDING', rev: 0 });
  assert.equal(cache.sight('a', T0 + INTERVAL + 10).kind, 'seen');
  assert.equal(cache.sight('new', T0 + INTERVAL + 10).kind, 'seen');
  assert.equal(cache.sight('new', T0 + INTERVAL + 11).kind, 'unknown');
  changes.length = 0;
  cloud.listGate = undefined;
  gate.resolve();
  await at(INTERVAL + 20);
  const kept = cache.sight('a', 0);
  assert.equal(kept.kind === 'seen' && kept.cloud.phase, 'PAUSED', 'the older list does not undo it');
  assert.equal(cache.has('new'), true, 'nor drop what it could not have listed');
  assert.deepEqual(changes, []);
  await at(2 * INTERVAL + 10);
  const relisted = cache.sight('a', 0);
  assert.equal(relisted.kind === 'seen' && relisted.cloud.phase, 'RUNNING', 'a newer list wins');
  assert.equal(cache.has('new'), false);
  assert.deepEqual(changes.sort(), ['a', 'new']);
});

test('a remember made while a list is in flight is newer than that list: it neither overwrites nor drops it', async (t) => {
  // Sightings take distinct, ordered stamps even within one millisecond: an object just created (or read)
  // is never taken for gone, or for older, by a list that started before the answer came.
  const { cloud, cache, changes, at } = world(t);
  cloud.put('a', 'RUNNING');
  cloud.onList = () => {
    cloud.onList = undefined;
    cache.remember({ id: 'a', phase: 'PAUSED', rev: 0 });
    cache.remember({ id: 'made', phase: 'PENDING', rev: 0 });
  };
  cache.start();
  await at(1);
  const seen = cache.sight('a', 0);
  assert.equal(seen.kind === 'seen' && seen.cloud.phase, 'PAUSED');
  assert.equal(cache.has('made'), true, 'not dropped by a list that started before it was made');
  assert.deepEqual(changes, []);
  // The next list, started after, has the cloud's word.
  cache.requestRefresh();
  await at(MIN + 2);
  assert.equal(cloud.listTimes.length, 2);
  const next = cache.sight('a', 0);
  assert.equal(next.kind === 'seen' && next.cloud.phase, 'RUNNING');
  assert.equal(cache.has('made'), false);
});

test('remembering what the list already shows is no change at the next list', async (t) => {
  const { cloud, cache, changes, at } = world(t);
  await at(3);
  cache.remember({ id: 'a', phase: 'RUNNING', rev: 0 });
  cloud.put('a', 'RUNNING');
  await at(4);
  cache.start();
  await at(5);
  assert.deepEqual(changes, []);
  assert.equal(cache.sight('a', T0 + 5).kind, 'seen', 'the list moved its sighting');
});

test('complete reads once per fingerprint of what the read returned; forget drops it', async (t) => {
  const { cloud, cache } = world(t, { enrich: true });
  const listed = cloud.put('a', 'RUNNING');
  const first = await cache.complete({ ...listed });
  assert.deepEqual(first, { id: 'a', phase: 'RUNNING', rev: 0, full: true });
  assert.equal(await cache.complete({ ...listed }), first, 'same fingerprint: no read');
  assert.deepEqual(cloud.enriched, ['a']);

  // The read finds the object newer than the list: kept under the newer fingerprint.
  cloud.put('a', 'PAUSED');
  const stale = { id: 'a', phase: 'RUNNING', rev: 1 };
  const newer = await cache.complete(stale);
  assert.deepEqual(newer, { id: 'a', phase: 'PAUSED', rev: 0, full: true });
  assert.deepEqual(await cache.complete({ id: 'a', phase: 'PAUSED', rev: 0 }), newer);
  await cache.complete(stale);
  assert.deepEqual(cloud.enriched, ['a', 'a', 'a'], 'the stale listing is not served the newer read');

  cache.forget('a');
  await cache.complete({ id: 'a', phase: 'PAUSED', rev: 0 });
  assert.deepEqual(cloud.enriched, ['a', 'a', 'a', 'a']);

  cache.rememberComplete({ id: 'b', phase: 'RUNNING', rev: 2, full: true });
  assert.deepEqual(await cache.complete({ id: 'b', phase: 'RUNNING', rev: 2 }), {
    id: 'b',
    phase: 'RUNNING',
    rev: 2,
    full: true,
  });
  assert.deepEqual(cloud.enriched, ['a', 'a', 'a', 'a'], 'a create answer is complete already');
});

test('without enrich, complete returns the listed object as it is', async (t) => {
  const { cloud, cache } = world(t);
  const listed = cloud.put('a', 'RUNNING');
  cache.rememberComplete({ ...listed, full: true });
  assert.equal(await cache.complete(listed), listed);
});

test('a hint the cache already shows costs nothing', async (t) => {
  const { cloud, cache, at } = world(t);
  cloud.put('a', 'RUNNING');
  cache.start();
  await at(500);
  cache.hint('a', 'RUNNING');
  await at(INTERVAL);
  assert.deepEqual(cloud.gets, []);
  assert.deepEqual(cloud.listTimes, [1]);
});

test('a hint with no list due reads that one object and reports it if it changed', async (t) => {
  const { cloud, cache, changes, at } = world(t, { enrich: true });
  cloud.put('a', 'RUNNING');
  cloud.put('b', 'RUNNING');
  cache.start();
  await at(500);
  changes.length = 0;
  cloud.put('a', 'FAILED');
  cache.hint('a', 'FAILED');
  await at(501);
  assert.deepEqual(cloud.gets, ['a']);
  assert.deepEqual(changes, ['a']);
  assert.deepEqual(cloud.listTimes, [1]);
  const seen = cache.sight('a', T0 + 500);
  assert.deepEqual(seen.kind === 'seen' && seen.cloud, { id: 'a', phase: 'FAILED', rev: 0, full: true });
  assert.equal(cache.sight('a', T0 + 501).kind, 'unknown', 'seen as of when the read started');
  assert.deepEqual(await cache.complete({ id: 'a', phase: 'FAILED', rev: 0 }), {
    id: 'a',
    phase: 'FAILED',
    rev: 0,
    full: true,
  });
  assert.deepEqual(cloud.enriched, [], 'a get answers the whole object');

  // Past the coalescing window, a hint whose read finds nothing new reports nothing.
  await at(500 + MIN);
  cache.hint('b', 'PAUSED');
  await at(500 + MIN + 1);
  assert.deepEqual(cloud.gets, ['a', 'b']);
  assert.deepEqual(changes, ['a']);
  assert.deepEqual(cloud.listTimes, [1]);
});

test('a burst of hints reads once per window: the next hint within it rides a list', async (t) => {
  const { cloud, cache, at } = world(t);
  cloud.put('a', 'RUNNING');
  cloud.put('b', 'RUNNING');
  cache.start();
  await at(500);
  cloud.put('a', 'FAILED');
  cloud.put('b', 'FAILED');
  cache.hint('a', 'FAILED');
  await at(500 + MIN - 1);
  cache.hint('b', 'FAILED');
  await at(500 + MIN + 10);
  assert.deepEqual(cloud.gets, ['a']);
  assert.deepEqual(cloud.listTimes, [1, 600], 'within the window of the read: a list at once');
  const b = cache.sight('b', 0);
  assert.equal(b.kind === 'seen' && b.cloud.phase, 'FAILED');
});

test('a repeated hint while its object is being read does not read it twice', async (t) => {
  const { cloud, cache, at } = world(t);
  cloud.put('a', 'RUNNING');
  cache.start();
  await at(500);
  cloud.getGate = deferred();
  const gate = cloud.getGate;
  cloud.put('a', 'FAILED');
  cache.hint('a', 'FAILED');
  await at(500 + MIN);
  cache.hint('a', 'FAILED');
  await at(500 + MIN + 1);
  assert.deepEqual(cloud.gets, ['a']);
  cloud.getGate = undefined;
  gate.resolve();
  await at(500 + 2 * MIN + 1);
  cache.hint('a', 'EXITED');
  await at(500 + 2 * MIN + 2);
  assert.deepEqual(cloud.gets, ['a', 'a'], 'once read, the next hint reads again');
});

test('what was remembered during a read is newer than the read', async (t) => {
  const { cloud, cache, changes, at } = world(t);
  cloud.put('a', 'RUNNING');
  cache.start();
  await at(500);
  changes.length = 0;
  cloud.getGate = deferred();
  const gate = cloud.getGate;
  cloud.put('a', 'FAILED');
  cache.hint('a', 'FAILED');
  await at(510);
  cache.remember({ id: 'a', phase: 'PAUSED', rev: 0 });
  gate.resolve();
  await at(511);
  const seen = cache.sight('a', 0);
  assert.equal(seen.kind === 'seen' && seen.cloud.phase, 'PAUSED');
  assert.deepEqual(changes, []);
});

test("a remember made after a read started is newer than the read; the next read has the cloud's word", async (t) => {
  const { cloud, cache, changes, at } = world(t);
  cloud.put('a', 'RUNNING');
  cache.start();
  await at(500);
  changes.length = 0;
  cloud.put('a', 'FAILED');
  cache.hint('a', 'FAILED');
  cache.remember({ id: 'a', phase: 'PAUSED', rev: 0 });
  await at(501);
  const seen = cache.sight('a', 0);
  assert.equal(seen.kind === 'seen' && seen.cloud.phase, 'PAUSED', 'the read started before it');
  assert.deepEqual(changes, []);
  cache.hint('a', 'FAILED');
  await at(700);
  const next = cache.sight('a', 0);
  assert.equal(next.kind === 'seen' && next.cloud.phase, 'FAILED');
  assert.deepEqual(changes, ['a']);
});

test('a hinted object the cloud no longer has, or a failed read, makes a list', async (t) => {
  const { cloud, cache, at } = world(t);
  cloud.put('a', 'RUNNING');
  cloud.put('b', 'RUNNING');
  cache.start();
  await at(500);
  cloud.objects.delete('a');
  cache.hint('a', 'TERMINATED');
  await at(599);
  assert.deepEqual(cloud.listTimes, [1, 501], 'gone: a list, at once since none ran lately');
  assert.equal(cache.has('a'), false);

  await at(800);
  cloud.getError = new Error('read failed');
  cache.hint('b', 'FAILED');
  await at(801);
  assert.deepEqual(cloud.gets, ['a', 'b']);
  assert.deepEqual(cloud.listTimes, [1, 501, 801]);
});

test('a read answered after the cache stopped is dropped', async (t) => {
  const { cloud, cache, changes, at } = world(t);
  cloud.put('a', 'RUNNING');
  cache.start();
  await at(500);
  changes.length = 0;
  cloud.getGate = deferred();
  const gate = cloud.getGate;
  cloud.put('a', 'FAILED');
  cache.hint('a', 'FAILED');
  await at(501);
  cache.stop();
  gate.resolve();
  await at(600);
  const seen = cache.sight('a', 0);
  assert.equal(seen.kind === 'seen' && seen.cloud.phase, 'RUNNING');
  assert.deepEqual(changes, []);
  assert.deepEqual(cloud.listTimes, [1]);
});

test('a hint near a due list rides it, and is dropped if the cache shows that state before it starts', async (t) => {
  const { cloud, cache, at } = world(t);
  cloud.put('a', 'RUNNING');
  cloud.put('b', 'RUNNING');
  cache.start();
  await at(INTERVAL - MIN + 10);
  cache.hint('a', 'PAUSED');
  cache.remember({ id: 'a', phase: 'PAUSED', rev: 0 });
  await at(1000);
  assert.deepEqual(cloud.listTimes, [1], 'shown by then: the list keeps its time');
  assert.deepEqual(cloud.gets, []);
  await at(1001);
  assert.deepEqual(cloud.listTimes, [1, 1001]);

  await at(1911);
  cache.hint('b', 'PAUSED');
  await at(1912);
  assert.deepEqual(cloud.listTimes, [1, 1001, 1912], 'not shown: the list runs now');
  assert.deepEqual(cloud.gets, []);
  await at(2911);
  assert.deepEqual(cloud.listTimes, [1, 1001, 1912], 'a list that did not show it still answers the hint');
});

test('a hint arriving while a list runs is carried by the list after it', async (t) => {
  const { cloud, cache, at } = world(t);
  cloud.put('a', 'RUNNING');
  cache.start();
  await at(1);
  cloud.listGate = deferred();
  const gate = cloud.listGate;
  await at(1001);
  cloud.put('a', 'FAILED');
  cache.hint('a', 'FAILED');
  await at(1021);
  cloud.listGate = undefined;
  gate.resolve();
  await at(1120);
  assert.deepEqual(cloud.listTimes, [1, 1001]);
  await at(1121);
  assert.deepEqual(cloud.gets, []);
  assert.deepEqual(cloud.listTimes, [1, 1001, 1121]);
});

test('a waiter for a moment still ahead keeps lists coming a minimum interval apart until one starts after it', async (t) => {
  const { cloud, cache, at } = world(t);
  cache.start();
  await at(1);
  let released = false;
  void cache.waitForListAfter(T0 + 250).then(() => {
    released = true;
  });
  await at(300);
  assert.equal(released, false);
  assert.deepEqual(cloud.listTimes, [1, 101, 201]);
  await at(301);
  assert.equal(released, true);
  await at(1300);
  assert.deepEqual(cloud.listTimes, [1, 101, 201, 301], 'then the interval');
});

test('a list that ends after the cache stopped schedules no other', async (t) => {
  const { cloud, cache, at } = world(t);
  cloud.listGate = deferred();
  const gate = cloud.listGate;
  cache.start();
  await at(10);
  cache.requestRefresh();
  cache.stop();
  cloud.listGate = undefined;
  gate.resolve();
  await at(3 * INTERVAL);
  assert.deepEqual(cloud.listTimes, [1]);
});

test('a hint exactly one minimum interval before the due list rides it', async (t) => {
  const { cloud, cache, at } = world(t);
  cloud.put('a', 'RUNNING');
  cache.start();
  await at(901);
  cache.hint('a', 'FAILED');
  await at(902);
  assert.deepEqual(cloud.gets, []);
  assert.deepEqual(cloud.listTimes, [1, 902]);
});

test('one failed list backs off once: after a success the interval is back', async (t) => {
  const { cloud, cache, at } = world(t);
  cloud.listFailures = 1;
  cache.start();
  await at(1201);
  assert.deepEqual(cloud.listTimes, [1, 201, 1201]);
});

test('a hint about an object the cache has never seen reads it', async (t) => {
  const { cloud, cache, changes, at } = world(t);
  cache.start();
  await at(500);
  cloud.put('new', 'RUNNING');
  cache.hint('new', 'RUNNING');
  await at(501);
  assert.deepEqual(cloud.gets, ['new']);
  assert.deepEqual(changes, ['new']);
  assert.equal(cache.has('new'), true);
});

test('the steady interval counts from the end of a slow list', async (t) => {
  const { cloud, cache, at } = world(t);
  cloud.listGate = deferred();
  const gate = cloud.listGate;
  cache.start();
  await at(250);
  cloud.listGate = undefined;
  gate.resolve();
  await at(1249);
  assert.deepEqual(cloud.listTimes, [1]);
  await at(1250);
  assert.deepEqual(cloud.listTimes, [1, 1250]);
});
