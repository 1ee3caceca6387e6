import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Registry } from 'prom-client';
import { HealthServer } from '../../src/controller/health-server.ts';
import { RuntimeMetrics } from '../../src/controller/metrics.ts';
import { createLogger } from '../../src/lib/logger.ts';

const logger = createLogger({ level: 'silent' });

function blockEventLoop(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // Busy on purpose: the probe must notice a blocked loop.
  }
}

describe('HealthServer', () => {
  const registry = new Registry();
  const metrics = new RuntimeMetrics(registry);
  const server = new HealthServer({
    port: 0,
    host: '127.0.0.1',
    registry,
    logger,
    // Far above what a loaded machine stalls a responsive loop (119 ms seen in a unit run at 100): only the
    // test's own block trips it.
    maxEventLoopDelayMs: 1000,
    checkTimeoutMs: 200,
  });
  let synced = false;
  let base = '';

  before(async () => {
    server.addReadyCheck('informers', () => synced || 'informer configmaps not synced');
    await server.start();
    base = `http://127.0.0.1:${server.port}`;
  });
  after(() => server.stop());

  test('/healthz answers ok while the event loop is responsive', async () => {
    const response = await fetch(`${base}/healthz`);
    assert.equal(response.status, 200);
    assert.equal(await response.text(), 'ok\n');
  });

  test('/healthz fails after the event loop was blocked, and recovers on the next probe', async () => {
    await fetch(`${base}/healthz`);
    blockEventLoop(1500);
    const blocked = await fetch(`${base}/healthz`);
    assert.equal(blocked.status, 500);
    assert.match(
      await blocked.text(),
      /\[-\]event-loop failed: event loop blocked for \d+ ms \(limit 1000 ms\)/,
    );
    const recovered = await fetch(`${base}/healthz`);
    assert.equal(recovered.status, 200);
  });

  test('/readyz reflects its checks, with reasons', async () => {
    const notReady = await fetch(`${base}/readyz`);
    assert.equal(notReady.status, 500);
    assert.match(await notReady.text(), /\[-\]informers failed: informer configmaps not synced/);
    synced = true;
    const ready = await fetch(`${base}/readyz?verbose`);
    assert.equal(ready.status, 200);
    assert.match(await ready.text(), /\[\+\]informers ok\ncheck passed/);
  });

  test('a check that throws or never answers fails the probe instead of hanging it', async () => {
    server.addHealthCheck('throws', () => {
      throw new Error('cache corrupted');
    });
    server.addHealthCheck('hangs', () => new Promise<boolean>(() => {}));
    const response = await fetch(`${base}/healthz`);
    assert.equal(response.status, 500);
    const body = await response.text();
    assert.match(body, /\[-\]throws failed: cache corrupted/);
    assert.match(body, /\[-\]hangs failed: no answer within 200 ms/);
    assert.match(body, /\[\+\]event-loop ok/, 'the other checks still answer beside them');
  });

  test('/metrics serves the registry in the Prometheus text format', async () => {
    const controller = metrics.controller('gpupod', 4);
    controller.reconcileStarted();
    controller.reconcileFinished('requeue_after', 0.02);
    const response = await fetch(`${base}/metrics`);
    assert.equal(response.status, 200);
    assert.match(response.headers.get('content-type') ?? '', /^text\/plain/);
    const body = await response.text();
    assert.match(body, /controller_runtime_reconcile_total\{controller="gpupod",result="requeue_after"\} 1/);
    assert.match(body, /controller_runtime_max_concurrent_reconciles\{controller="gpupod"\} 4/);
  });

  test('unknown paths and methods are refused', async () => {
    assert.equal((await fetch(`${base}/nope`)).status, 404);
    assert.equal((await fetch(`${base}/healthz`, { method: 'POST' })).status, 405);
  });
});

test('stop closes the port', async () => {
  const server = new HealthServer({ port: 0, host: '127.0.0.1', registry: new Registry(), logger });
  await server.start();
  const url = `http://127.0.0.1:${server.port}/healthz`;
  assert.equal((await fetch(url)).status, 200);
  await server.stop();
  await assert.rejects(fetch(url));
});
