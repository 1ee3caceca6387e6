import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Registry } from 'prom-client';
import { RuntimeMetrics } from '../../src/controller/metrics.ts';
import { WorkQueue } from '../../src/controller/work-queue.ts';

/** Sum of the samples named `sample` (a histogram's `_count` included) that carry `labels`. */
async function value(
  registry: Registry,
  sample: string,
  labels: Record<string, string> = {},
): Promise<number> {
  const metric = registry.getSingleMetric(sample) ?? registry.getSingleMetric(sample.replace(/_count$/, ''));
  assert.ok(metric, `${sample} is registered`);
  const values = (await metric.get()).values.filter(
    (v) =>
      ('metricName' in v ? v.metricName : sample) === sample &&
      Object.entries(labels).every(([k, expected]) => v.labels[k] === expected),
  );
  return values.reduce((sum, v) => sum + v.value, 0);
}

test('work queue metrics follow keys through the queue', async () => {
  const registry = new Registry();
  const metrics = new RuntimeMetrics(registry).controller('gpuvm', 2);
  const queue = new WorkQueue({ observer: metrics.queue });
  queue.add('ns/a');
  queue.add('ns/b');
  queue.add('ns/a');
  assert.equal(await value(registry, 'workqueue_depth', { name: 'gpuvm' }), 2);
  assert.equal(await value(registry, 'workqueue_adds_total', { name: 'gpuvm' }), 2);

  const key = await queue.get();
  assert.equal(await value(registry, 'workqueue_depth', { name: 'gpuvm' }), 1);
  assert.equal(await value(registry, 'workqueue_queue_duration_seconds_count', { name: 'gpuvm' }), 1);
  await new Promise((resolve) => setTimeout(resolve, 20));
  assert.ok((await value(registry, 'workqueue_unfinished_work_seconds', { name: 'gpuvm' })) > 0);
  assert.ok((await value(registry, 'workqueue_longest_running_processor_seconds', { name: 'gpuvm' })) > 0);

  queue.done(key ?? '');
  assert.equal(await value(registry, 'workqueue_work_duration_seconds_count', { name: 'gpuvm' }), 1);
  assert.equal(await value(registry, 'workqueue_unfinished_work_seconds', { name: 'gpuvm' }), 0);
  queue.addRateLimited('ns/a');
  assert.equal(await value(registry, 'workqueue_retries_total', { name: 'gpuvm' }), 1);
  queue.shutdown();
});

test('reconcile metrics count outcomes, errors, time and busy workers per controller', async () => {
  const registry = new Registry();
  const runtime = new RuntimeMetrics(registry);
  const pods = runtime.controller('gpupod', 4);
  const vms = runtime.controller('gpuvm', 1);
  pods.reconcileStarted();
  pods.reconcileStarted();
  assert.equal(await value(registry, 'controller_runtime_active_workers', { controller: 'gpupod' }), 2);
  pods.reconcileFinished('success', 0.01);
  pods.reconcileFinished('error', 0.5);
  vms.reconcileStarted();
  vms.reconcileFinished('requeue', 0.02);
  assert.equal(await value(registry, 'controller_runtime_active_workers', { controller: 'gpupod' }), 0);
  assert.equal(await value(registry, 'controller_runtime_reconcile_total', { controller: 'gpupod' }), 2);
  assert.equal(
    await value(registry, 'controller_runtime_reconcile_errors_total', { controller: 'gpupod' }),
    1,
  );
  assert.equal(
    await value(registry, 'controller_runtime_reconcile_errors_total', { controller: 'gpuvm' }),
    0,
  );
  assert.equal(await value(registry, 'controller_runtime_reconcile_total', { result: 'requeue' }), 1);
  assert.equal(
    await value(registry, 'controller_runtime_reconcile_time_seconds_count', { controller: 'gpupod' }),
    2,
  );
  assert.equal(
    await value(registry, 'controller_runtime_max_concurrent_reconciles', { controller: 'gpupod' }),
    4,
  );
  runtime.setLeader('gpucloud-operator', true);
  assert.equal(await value(registry, 'leader_election_master_status', { name: 'gpucloud-operator' }), 1);
});
