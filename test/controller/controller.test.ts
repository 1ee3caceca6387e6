import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { setImmediate as tick } from 'node:timers/promises';
import { Registry } from 'prom-client';
import { Controller, type Reconciler, TerminalError } from '../../src/controller/controller.ts';
import { RuntimeMetrics } from '../../src/controller/metrics.ts';
import { ItemExponentialFailureRateLimiter } from '../../src/controller/queue-rate-limiters.ts';
import type { Enqueue, EventSource } from '../../src/controller/source.ts';
import type { Arrival } from '../../src/controller/work-queue.ts';
import { keyToString } from '../../src/kube/object.ts';
import { captureLogs } from '../support/log-capture.ts';
import { until } from '../support/until.ts';

/** A source the test fires by hand: the controller under test sees ordinary keys. */
function manualSource() {
  let enqueue: Enqueue | undefined;
  const source: EventSource = {
    start(fn) {
      enqueue = fn;
      return () => {
        enqueue = undefined;
      };
    },
    hasSynced: () => true,
  };
  return {
    source,
    fire: (namespace: string, name: string, arrival?: Arrival) => enqueue?.({ namespace, name }, arrival),
  };
}

function setUp(reconcile: Reconciler, maxConcurrentReconciles = 1) {
  const registry = new Registry();
  const logs = captureLogs();
  const { source, fire } = manualSource();
  const controller = new Controller({
    name: 'test',
    sources: [source],
    reconcile,
    maxConcurrentReconciles,
    rateLimiter: new ItemExponentialFailureRateLimiter(1, 20),
    logger: logs.logger,
    metrics: new RuntimeMetrics(registry).controller('test', maxConcurrentReconciles),
  });
  const metric = async (name: string, labels: Record<string, string>) => {
    const values = (await registry.getSingleMetric(name)?.get())?.values ?? [];
    const found = values.find((v) => Object.entries(labels).every(([k, val]) => v.labels[k] === val));
    return found?.value ?? 0;
  };
  return { controller, fire, logs, metric };
}

describe('Controller', () => {
  test('retries a failing key with backoff until it succeeds, then forgets it', async () => {
    let calls = 0;
    const { controller, fire, metric } = setUp(async () => {
      calls++;
      if (calls <= 3) throw new Error(`attempt ${calls} failed`);
    });
    controller.start();
    fire('ns', 'a');
    await until(() => calls === 4, 'the fourth attempt');
    await controller.stop(1_000);
    assert.equal(await metric('controller_runtime_reconcile_total', { result: 'error' }), 3);
    assert.equal(await metric('controller_runtime_reconcile_errors_total', { controller: 'test' }), 3);
    assert.equal(await metric('controller_runtime_reconcile_total', { result: 'success' }), 1);
    assert.equal(await metric('workqueue_retries_total', { name: 'test' }), 3);
  });

  test('a turn put off keeps the key’s backoff: the failure after it counts on from the failures before', async () => {
    let calls = 0;
    const { controller, fire, logs } = setUp(async () => {
      calls++;
      if (calls === 3) return { deferred: true };
      if (calls <= 4) throw new Error(`attempt ${calls} failed`);
    });
    controller.start();
    fire('ns', 'a');
    await until(() => calls === 3, 'the turn put off');
    await tick();
    fire('ns', 'a'); // the event the turn waited for
    await until(() => calls === 5, 'the retry after the fourth');
    await controller.stop(1_000);
    const retries = logs.lines
      .filter((line) => line.msg === 'reconcile failed; retrying with backoff')
      .map((line) => line.retries);
    assert.deepEqual(retries, [0, 1, 2], 'not 0 again after the turn put off');
  });

  test('a source’s new keys wait behind the ongoing ones, each in the order they came', async () => {
    const order: string[] = [];
    let release: () => void = () => {};
    const busy = new Promise<void>((resolve) => {
      release = resolve;
    });
    const { controller, fire } = setUp(async (key) => {
      order.push(key.name);
      if (key.name === 'first') await busy;
    });
    controller.start();
    fire('ns', 'first');
    await until(() => order.length === 1, 'the first turn');
    fire('ns', 'new-1', 'new');
    fire('ns', 'new-2', 'new');
    fire('ns', 'ongoing-1');
    fire('ns', 'ongoing-2', 'ongoing');
    release();
    await until(() => order.length === 5, 'every key handled');
    await controller.stop(1_000);
    assert.deepEqual(order, ['first', 'ongoing-1', 'ongoing-2', 'new-1', 'new-2']);
  });

  test('survives reconcilers that throw synchronously or throw non-errors, and logs the key', async () => {
    const thrown: unknown[] = [undefined, 'a string', 42];
    let calls = 0;
    const { controller, fire, logs } = setUp((key) => {
      calls++;
      if (key.name === 'sync') throw new Error('synchronous panic');
      return Promise.reject(thrown[calls % thrown.length]);
    });
    controller.start();
    fire('ns', 'sync');
    fire('ns', 'odd');
    await until(() => calls >= 6, 'several failed attempts');
    await controller.stop(1_000);
    const failures = logs.lines.filter((line) => line.msg === 'reconcile failed; retrying with backoff');
    assert.ok(
      failures.some((line) => line.name === 'sync' && line.namespace === 'ns' && line.controller === 'test'),
    );
    assert.ok(failures.some((line) => line.name === 'odd'));
    assert.ok(failures.every((line) => typeof line.reconcileID === 'string'));
  });

  test('each finished reconcile says at debug level what it came to, with the key and its reconcile id', async () => {
    const { controller, fire, logs } = setUp(async (key) => {
      if (key.name === 'bad') throw new TerminalError('refused');
      if (key.name === 'poll') return { requeueAfterMs: 60_000 };
      return undefined;
    });
    controller.start();
    for (const name of ['ok', 'bad', 'poll']) fire('ns', name);
    const finished = () => logs.lines.filter((line) => line.msg === 'reconcile finished');
    try {
      await until(() => finished().length === 3, 'three finished reconciles', 5_000);
    } finally {
      await controller.stop(1_000);
    }
    assert.deepEqual(
      finished()
        .map((line) => [line.level, line.controller, line.namespace, line.name, line.result, line.terminal])
        .toSorted(),
      [
        ['debug', 'test', 'ns', 'bad', 'error', true],
        ['debug', 'test', 'ns', 'ok', 'success', false],
        ['debug', 'test', 'ns', 'poll', 'requeue_after', false],
      ],
    );
    assert.ok(finished().every((line) => typeof line.reconcileID === 'string'));
  });

  test('requeueAfterMs reconciles the key again later and is reported as requeue_after', async () => {
    const seen: string[] = [];
    const { controller, fire, metric } = setUp(async (key) => {
      seen.push(key.name);
      return seen.length < 3 ? { requeueAfterMs: 5 } : undefined;
    });
    controller.start();
    fire('ns', 'poll');
    await until(() => seen.length === 3, 'three polls');
    await controller.stop(1_000);
    assert.deepEqual(seen, ['poll', 'poll', 'poll']);
    assert.equal(await metric('controller_runtime_reconcile_total', { result: 'requeue_after' }), 2);
    assert.equal(await metric('controller_runtime_reconcile_total', { result: 'success' }), 1);
  });

  test('a terminal error is not retried', async () => {
    let calls = 0;
    const { controller, fire, logs, metric } = setUp(async () => {
      calls++;
      throw new TerminalError('spec rejected by the cloud');
    });
    controller.start();
    fire('ns', 'bad');
    await until(
      () => logs.lines.some((line) => String(line.msg).includes('terminal error')),
      'the terminal log',
    );
    fire('ns', 'other');
    await until(() => calls === 2, 'the other key');
    await controller.stop(1_000);
    assert.equal(calls, 2);
    // As controller-runtime counts it: an error, and a terminal one, never a success.
    assert.equal(await metric('controller_runtime_reconcile_total', { result: 'error' }), 2);
    assert.equal(await metric('controller_runtime_reconcile_total', { result: 'success' }), 0);
    assert.equal(await metric('controller_runtime_reconcile_errors_total', { controller: 'test' }), 2);
    assert.equal(
      await metric('controller_runtime_terminal_reconcile_errors_total', { controller: 'test' }),
      2,
    );
  });

  test('runs different keys in parallel but never one key twice at once', async () => {
    const inFlight = new Set<string>();
    const counts = new Map<string, number>();
    let overlaps = 0;
    let maxParallel = 0;
    const { controller, fire } = setUp(async (key) => {
      const id = keyToString(key);
      if (inFlight.has(id)) overlaps++;
      inFlight.add(id);
      maxParallel = Math.max(maxParallel, inFlight.size);
      await new Promise((resolve) => setTimeout(resolve, 3));
      counts.set(id, (counts.get(id) ?? 0) + 1);
      inFlight.delete(id);
    }, 4);
    controller.start();
    for (let round = 0; round < 20; round++) {
      for (const name of ['a', 'b', 'c', 'd', 'e', 'f']) fire('ns', name);
      await tick();
    }
    await until(() => inFlight.size === 0 && counts.size === 6, 'all keys reconciled');
    await controller.stop(1_000);
    assert.equal(overlaps, 0);
    assert.ok(maxParallel > 1 && maxParallel <= 4, `parallelism ${maxParallel}`);
  });

  test('stop lets the reconcile in progress finish within the grace period', async () => {
    let finished = false;
    let started = false;
    let release: () => void = () => {};
    const { controller, fire } = setUp(async () => {
      started = true;
      await new Promise<void>((resolve) => {
        release = resolve;
      });
      finished = true;
    });
    controller.start();
    fire('ns', 'slow');
    await until(() => started, 'the reconcile to start');
    const stopping = controller.stop(10_000);
    fire('ns', 'ignored');
    release();
    await stopping;
    assert.equal(finished, true);
  });

  test('stop(0) aborts the signal of reconciles in progress at once', async () => {
    let signal: AbortSignal | undefined;
    const { controller, fire } = setUp(async (_key, context) => {
      signal = context.signal;
      await new Promise((resolve) => context.signal.addEventListener('abort', resolve, { once: true }));
    });
    controller.start();
    fire('ns', 'long');
    await until(() => signal !== undefined, 'the reconcile to start');
    await controller.stop(0);
    assert.equal(signal?.aborted, true);
  });
});
