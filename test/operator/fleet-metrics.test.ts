import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Registry } from 'prom-client';
import { parseMetrics, type Sample } from '../../bench/prometheus.ts';
import { FleetMetrics } from '../../src/managed/core/fleet-metrics.ts';
import {
  isReady,
  manifests,
  resources,
  type TestObject,
  useOperator,
  useStack,
} from '../support/operator.ts';
import { poll } from '../support/until.ts';

// The fleet gauges against a known fleet on the local stack: what runs, where, of which GPU model, at
// what spend, and the endpoint's workers and tasks — each compared with what the resources' status says.
const A = 'fleet-a';
const B = 'fleet-b';
const stack = useStack();

const value = (samples: readonly Sample[], name: string, labels: Record<string, string>) =>
  samples
    .filter((s) => s.name === name && Object.entries(labels).every(([key, v]) => s.labels[key] === v))
    .reduce((sum, s) => sum + s.value, 0);
const status = (obj: TestObject | undefined) => (obj?.status ?? {}) as Record<string, unknown>;

describe('fleet metrics', () => {
  const operator = useOperator(stack, [A, B]);

  test('GPUs, resources by phase, spend, workers and tasks match the fleet', async () => {
    const cluster = stack.cluster();
    await cluster.create(resources.gpuPod, A, manifests.gpuPod('run', { gpuCount: 1 }));
    await cluster.create(resources.gpuPod, A, manifests.gpuPod('nap', { gpuCount: 2, paused: true }));
    await cluster.create(resources.gpuVm, A, manifests.gpuVm('box'));
    await cluster.create(
      resources.serverlessEndpoint,
      A,
      manifests.serverlessEndpoint('queue', { workers: 2 }),
    );
    await cluster.create(resources.gpuPod, B, manifests.gpuPod('other', { gpuCount: 2 }));
    const pod = await cluster.waitFor(
      resources.gpuPod,
      A,
      'run',
      (o) => status(o).prices !== undefined,
      'priced',
    );
    await cluster.waitFor(resources.gpuPod, A, 'nap', (o) => o?.status?.phase === 'PAUSED', 'paused');
    const vm = await cluster.waitFor(
      resources.gpuVm,
      A,
      'box',
      (o) => status(o).pricePerHour !== undefined,
      'priced',
    );
    const endpoint = await cluster.waitFor(
      resources.serverlessEndpoint,
      A,
      'queue',
      (o) => isReady()(o) && status(o).runningWorkers === 2 && status(o).perHourPrice !== undefined,
      'running 2 workers, priced',
    );
    await cluster.waitFor(resources.gpuPod, B, 'other', isReady(), 'Ready');

    const samples = await poll(
      async () => parseMetrics((await operator().fetchHealth('/metrics')).body),
      (s) =>
        value(s, 'gpucloud_endpoint_workers', { namespace: A, endpoint: 'queue', state: 'running' }) === 2,
      'the gauges',
    );
    const gpus = (namespace: string, gpuType: string) =>
      value(samples, 'gpucloud_gpus_running', { namespace, gpu_type: gpuType });
    // The running pod's one L40S (the paused pod holds none), the VM's, and two workers of one GPU each.
    const expected = new Map([['NVIDIA L40S', 1]]);
    const add = (type: string, n: number) => expected.set(type, (expected.get(type) ?? 0) + n);
    add(String(status(vm).gpuType), Number(status(vm).gpuCount));
    add('NVIDIA GeForce RTX 4090', 2);
    for (const [type, n] of expected) assert.equal(gpus(A, type), n, type);
    assert.equal(gpus(B, 'NVIDIA L40S'), 2);
    const count = (kind: string, namespace: string, phase: string) =>
      value(samples, 'gpucloud_resources', { kind, namespace, phase });
    assert.equal(count('GpuPod', A, 'RUNNING'), 1);
    assert.equal(count('GpuPod', A, 'PAUSED'), 1);
    assert.equal(count('GpuVm', A, 'RUNNING'), 1);
    assert.equal(count('ServerlessEndpoint', A, 'RUNNING'), 1);

    const prices = status(pod).prices as { singleCard: string };
    const spend = (kind: string) =>
      value(samples, 'gpucloud_spend_rate_dollars_per_hour', { namespace: A, kind });
    assert.ok(Math.abs(spend('GpuPod') - Number(prices.singleCard)) < 1e-9, 'the running pod only');
    assert.ok(Math.abs(spend('GpuVm') - Number(status(vm).pricePerHour)) < 1e-9);
    assert.ok(Math.abs(spend('ServerlessEndpoint') - Number(status(endpoint).perHourPrice)) < 1e-9);
    assert.equal(
      value(samples, 'gpucloud_endpoint_workers', { namespace: A, endpoint: 'queue', state: 'desired' }),
      2,
    );
    // The cost so far is what the pods' statuses say, once the running pod has run long enough to cost
    // something (its details are read every 2 s): a scrape between two reads of the statuses that agree.
    const podsCost = async () => {
      const pods = await Promise.all(['run', 'nap'].map((name) => cluster.get(resources.gpuPod, A, name)));
      return pods.reduce((sum, pod) => sum + Number(status(pod).estimatedCost ?? 0), 0);
    };
    await poll(
      async () => {
        const before = await podsCost();
        const scraped = parseMetrics((await operator().fetchHealth('/metrics')).body);
        const gauge = value(scraped, 'gpucloud_estimated_cost_dollars', { namespace: A, kind: 'GpuPod' });
        return { before, gauge, after: await podsCost() };
      },
      ({ before, gauge, after }) => before > 0 && after === before && Math.abs(gauge - before) < 1e-9,
      "the estimated cost of A's pods as their statuses say it",
    );
    // Three pods reached Ready=True once each (a pod paused as asked is Ready), in both namespaces.
    assert.equal(value(samples, 'gpucloud_time_to_ready_seconds_count', { kind: 'GpuPod' }), 3);
    const tasks = status(endpoint).tasks as Record<string, number> | undefined;
    assert.equal(
      value(samples, 'gpucloud_endpoint_tasks', { namespace: A, endpoint: 'queue', status: 'success' }),
      tasks?.success ?? 0,
    );
  });
});

test('fleet gauges come only from the leader; a standby exports none', async () => {
  let leading = false;
  const registry = new Registry();
  const fleet = new FleetMetrics(registry, () => leading);
  fleet.add({
    kind: 'GpuPod',
    resources: () => [{ metadata: { namespace: 'n', name: 'p' }, status: { phase: 'RUNNING' } }],
    usage: () => ({ runningGpus: 4, gpuType: 'H100', dollarsPerHour: 2, dollarsSoFar: 1 }),
  });
  const gauges = async () =>
    parseMetrics(await registry.metrics()).filter((s) =>
      ['gpucloud_resources', 'gpucloud_gpus_running', 'gpucloud_spend_rate_dollars_per_hour'].includes(
        s.name,
      ),
    );
  assert.deepEqual(await gauges(), []);
  leading = true;
  const led = await gauges();
  assert.equal(value(led, 'gpucloud_gpus_running', { namespace: 'n', gpu_type: 'H100' }), 4);
  assert.equal(value(led, 'gpucloud_resources', { kind: 'GpuPod', phase: 'RUNNING' }), 1);
  leading = false;
  assert.deepEqual(await gauges(), [], 'a deposed leader stops exporting');
});
