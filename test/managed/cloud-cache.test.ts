import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { GpuCloudClient } from '../../src/api/client.ts';
import { systemClock } from '../../src/lib/clock.ts';
import { createLogger } from '../../src/lib/logger.ts';
import { CloudCache } from '../../src/managed/cloud-cache/cloud-cache.ts';
import { gpuPodAdapter } from '../../src/resources/gpu-pod/adapter.ts';
import type { PodView } from '../../src/resources/gpu-pod/details.ts';
import { type RunningSimulator, startSimulator } from '../../src/sim/index.ts';
import { MovableClock } from '../support/clock.ts';
import { poll } from '../support/until.ts';

const KEY = 'cache-test-key';
const log = createLogger({ destination: new Writable({ write: (_c, _e, done) => done() }) });

describe('the cloud cache over the real pod adapter and simulator', () => {
  let sim: RunningSimulator;
  let client: GpuCloudClient;
  const changed: string[] = [];
  let cache: CloudCache<PodView>;

  before(async () => {
    sim = await startSimulator({ apiKeys: [KEY], transitionMs: 0 });
    client = new GpuCloudClient({ baseUrl: sim.url, apiKey: KEY, retry: { maxRetries: 0 } });
    cache = new CloudCache(gpuPodAdapter(client), {
      intervalMs: 60_000,
      minIntervalMs: 10,
      onChange: (id) => changed.push(id),
      clock: systemClock,
      log,
    });
  });
  after(async () => {
    cache.stop();
    await client.close();
    await sim.stop();
  });

  const pod = (name: string) =>
    client.pods.create({ name, image: 'ubuntu:24.04', gpuType: 'NVIDIA L40S', gpuCount: 1 });

  test('one list answers for every pod, and an id no list has seen is unknown until a later list shows it absent', async () => {
    const first = await pod('a');
    const beforeStart = Date.now();
    cache.start();
    await cache.waitForListAfter(beforeStart);
    assert.ok(cache.hasSynced());
    const seen = cache.sight(first.id, 0);
    assert.equal(seen.kind, 'seen');
    assert.equal(seen.kind === 'seen' && seen.cloud.status, 'RUNNING');
    assert.equal(cache.sight('424242', 0).kind, 'absent');
    assert.equal(
      cache.sight('424242', Date.now() + 1000).kind,
      'unknown',
      'a list older than the question cannot answer it',
    );
    assert.equal(sim.calls.snapshot().byOperation['pods.list'], 1);
  });

  test('only the pods that changed between two lists are reported', async () => {
    const still = await pod('still');
    const moving = await pod('moving');
    await cache.waitForListAfter(Date.now());
    changed.length = 0;
    await client.pods.pause(moving.id);
    await cache.waitForListAfter(Date.now());
    assert.ok(changed.includes(moving.id), 'the paused pod is reported');
    assert.ok(!changed.includes(still.id), 'the unchanged pod is not');
  });

  test('an unchanged pod keeps its cached copy yet counts as seen by the latest list; a removed one is reported', async () => {
    const steady = await pod('steady');
    const leaving = await pod('leaving');
    await cache.waitForListAfter(Date.now());
    const first = cache.sight(steady.id, 0);
    await client.pods.delete(leaving.id);
    sim.clock.advance(60 * 60_000);
    changed.length = 0;
    const secondStart = Date.now();
    await cache.waitForListAfter(secondStart);
    const second = cache.sight(steady.id, secondStart);
    assert.equal(second.kind, 'seen', 'the latest list saw it');
    assert.equal(second.kind === 'seen' && first.kind === 'seen' && second.cloud === first.cloud, true);
    assert.equal(cache.sight(leaving.id, secondStart).kind, 'absent', 'gone from the cache');
    assert.ok(changed.includes(leaving.id), 'the pod gone from the list is reported');
    assert.ok(!changed.includes(steady.id));
  });

  test('a completed view goes with its object: once no list shows it, nothing of it is kept', async () => {
    const kept = await pod('viewed-kept');
    const going = await pod('viewed-going');
    await cache.waitForListAfter(Date.now());
    const before = cache.views;
    for (const made of [kept, going]) {
      const seen = cache.sight(made.id, 0);
      assert.equal(seen.kind, 'seen');
      if (seen.kind === 'seen') await cache.complete(seen.cloud);
    }
    assert.equal(cache.views, before + 2);
    await client.pods.delete(going.id);
    sim.clock.advance(60 * 60_000);
    await cache.waitForListAfter(Date.now());
    assert.equal(cache.views, before + 1, 'the gone object’s view is dropped, nobody having forgotten it');
  });

  test('what a reconciler learnt first-hand counts as seen at once and survives an older list', async () => {
    const created = await pod('fresh');
    const askedAt = Date.now();
    assert.equal(cache.sight(created.id, askedAt).kind, 'unknown');
    cache.remember(created);
    assert.equal(cache.sight(created.id, askedAt).kind, 'seen');
    await cache.waitForListAfter(Date.now());
    assert.equal(cache.sight(created.id, askedAt).kind, 'seen');
  });

  test('concurrent refresh requests share lists instead of each costing one', async () => {
    await cache.waitForListAfter(Date.now());
    const before = sim.calls.snapshot().byOperation['pods.list'] ?? 0;
    // A moment after the list just waited for: one that started in the same millisecond would do.
    const now = Date.now() + 1;
    await Promise.all(Array.from({ length: 50 }, () => cache.waitForListAfter(now)));
    const lists = (sim.calls.snapshot().byOperation['pods.list'] ?? 0) - before;
    assert.ok(lists >= 1 && lists <= 2, `50 waiters cost ${lists} lists`);
  });

  test('a callback hint reads that one pod when no list is due, and rides a list that is', async () => {
    const hinted = await pod('hinted');
    const other = await pod('other');
    await cache.waitForListAfter(Date.now());
    const count = (operation: string) => sim.calls.snapshot().byOperation[operation] ?? 0;
    const lists = count('pods.list');
    const gets = count('pods.get');
    cache.hint(hinted.id, 'RUNNING');
    await sleep(100);
    assert.deepEqual([count('pods.list'), count('pods.get')], [lists, gets], 'the cache shows it RUNNING');

    assert.ok(sim.faults.failPod(hinted.id, 'FAILED'));
    changed.length = 0;
    cache.hint(hinted.id, 'FAILED');
    await poll(
      async () => changed.slice(),
      (ids) => ids.includes(hinted.id),
      'the change reported',
      5000,
    );
    assert.equal(count('pods.get'), gets + 1, 'one get of that pod');
    assert.equal(count('pods.list'), lists, 'and no list: the next one is a poll interval away');
    const seen = cache.sight(hinted.id, 0);
    assert.equal(seen.kind === 'seen' && seen.cloud.status, 'FAILED');

    assert.ok(sim.faults.failPod(other.id, 'FAILED'));
    cache.requestRefresh();
    cache.hint(other.id, 'FAILED');
    await cache.waitForListAfter(Date.now());
    assert.equal(count('pods.get'), gets + 1, 'a list already due carries the news: no get');
    const listed = cache.sight(other.id, 0);
    assert.equal(listed.kind === 'seen' && listed.cloud.status, 'FAILED');
  });

  test('a failing list keeps the last view and reports no change', async () => {
    const kept = await pod('kept');
    await cache.waitForListAfter(Date.now());
    changed.length = 0;
    sim.faults.set({ errorRate: 1, operations: ['pods.list'] });
    try {
      const before = sim.calls.snapshot().byOperation['pods.list'] ?? 0;
      cache.requestRefresh();
      await poll(
        async () => sim.calls.snapshot().byOperation['pods.list'] ?? 0,
        (n) => n > before,
        'a failed list',
        5000,
      );
      assert.equal(cache.sight(kept.id, 0).kind, 'seen');
      assert.deepEqual(changed, []);
    } finally {
      sim.faults.reset();
    }
  });

  test('a list that started in the same millisecond as an act, before it, does not pass for one that saw it', async () => {
    const clock = new MovableClock();
    const standing = new CloudCache(gpuPodAdapter(client), {
      intervalMs: 60_000,
      minIntervalMs: 0,
      onChange: () => {},
      clock,
      log,
    });
    try {
      const made = await pod('same-ms');
      standing.start();
      await standing.waitForListAfter(clock.now());
      // The clock has not moved: the act is stamped after the list all the same.
      const acted = standing.stamp();
      assert.equal(standing.sight(made.id, acted).kind, 'unknown', 'the listed copy may predate the act');
      standing.requestRefresh();
      await standing.waitForListAfter(acted);
      assert.equal(standing.sight(made.id, acted).kind, 'seen', 'a list that started after it answers');
    } finally {
      standing.stop();
    }
  });
});
