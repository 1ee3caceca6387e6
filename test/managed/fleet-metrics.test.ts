import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Registry } from 'prom-client';
import type { ManagedObject } from '../../src/managed/core/external-kind.ts';
import { FleetMetrics, type FleetResource, type Usage } from '../../src/managed/core/fleet-metrics.ts';

async function samples(registry: Registry, name: string): Promise<Array<[Record<string, unknown>, number]>> {
  const metric = registry.getSingleMetric(name);
  assert.ok(metric, `${name} is registered`);
  const { values } = await metric.get();
  return values
    .map((sample): [Record<string, unknown>, number] => [{ ...sample.labels }, sample.value])
    .sort((a, b) => JSON.stringify(a[0]).localeCompare(JSON.stringify(b[0])));
}

function resource(
  namespace: string | undefined,
  name: string | undefined,
  status?: unknown,
  extra: Partial<FleetResource['metadata']> = {},
): FleetResource {
  return { metadata: { namespace, name, ...extra }, spec: {}, status };
}

const idle: Usage = { runningGpus: 0, dollarsPerHour: 0, dollarsSoFar: 0 };

test('resources are counted by kind, namespace and phase, Pending before the cloud reports one', async () => {
  const registry = new Registry();
  const metrics = new FleetMetrics(registry, () => true);
  metrics.add({
    kind: 'GpuPod',
    resources: () => [
      resource('a', 'p1', { phase: 'RUNNING' }),
      resource('a', 'p2', { phase: 'RUNNING' }),
      resource('a', 'p3', {}),
      resource('a', 'p4', { phase: 7 }),
      resource('a', 'p5', null),
      resource('a', 'p7'),
      resource('a', 'p8', 'RUNNING'),
      resource(undefined, 'p6', { phase: 'EXITED' }),
    ],
  });
  metrics.add({ kind: 'GpuVm', resources: () => [resource('b', 'v1', { phase: 'RUNNING' })] });
  assert.deepEqual(await samples(registry, 'gpucloud_resources'), [
    [{ kind: 'GpuPod', namespace: '', phase: 'EXITED' }, 1],
    [{ kind: 'GpuPod', namespace: 'a', phase: 'Pending' }, 5],
    [{ kind: 'GpuPod', namespace: 'a', phase: 'RUNNING' }, 2],
    [{ kind: 'GpuVm', namespace: 'b', phase: 'RUNNING' }, 1],
  ]);
});

test('a replica that is not the leader exports no fleet gauge, and one that stops leading clears them', async () => {
  const registry = new Registry();
  let leading = true;
  const metrics = new FleetMetrics(registry, () => leading);
  metrics.add({ kind: 'GpuPod', resources: () => [resource('a', 'p1', { phase: 'RUNNING' })] });
  assert.equal((await samples(registry, 'gpucloud_resources')).length, 1);
  leading = false;
  assert.deepEqual(await samples(registry, 'gpucloud_resources'), []);
});

test('GPUs, spend and cost add up by namespace, GPU model and kind; idle resources show no GPUs', async () => {
  const registry = new Registry();
  const metrics = new FleetMetrics(registry, () => true);
  const usages = new Map<string, Usage>([
    ['p1', { runningGpus: 2, gpuType: 'L40S', dollarsPerHour: 1.5, dollarsSoFar: 10 }],
    ['p2', { runningGpus: 1, gpuType: 'L40S', dollarsPerHour: 0.5, dollarsSoFar: 2 }],
    ['p3', { runningGpus: 4, dollarsPerHour: 8, dollarsSoFar: 1 }],
    ['p4', idle],
    ['p5', { runningGpus: 1, gpuType: 'H100', dollarsPerHour: 0, dollarsSoFar: 0 }],
  ]);
  metrics.add({
    kind: 'GpuPod',
    resources: () => [
      resource('a', 'p1'),
      resource('a', 'p2'),
      resource('b', 'p3'),
      resource(undefined, 'p4'),
      resource(undefined, 'p5'),
    ],
    usage: (mr) => usages.get(mr.metadata.name ?? '') ?? idle,
  });
  metrics.add({ kind: 'GpuVm', resources: () => [resource('a', 'v1')] });
  assert.deepEqual(await samples(registry, 'gpucloud_gpus_running'), [
    [{ namespace: '', gpu_type: 'H100' }, 1],
    [{ namespace: 'a', gpu_type: 'L40S' }, 3],
    [{ namespace: 'b', gpu_type: 'unknown' }, 4],
  ]);
  assert.deepEqual(await samples(registry, 'gpucloud_spend_rate_dollars_per_hour'), [
    [{ namespace: '', kind: 'GpuPod' }, 0],
    [{ namespace: 'a', kind: 'GpuPod' }, 2],
    [{ namespace: 'b', kind: 'GpuPod' }, 8],
  ]);
  assert.deepEqual(await samples(registry, 'gpucloud_estimated_cost_dollars'), [
    [{ namespace: '', kind: 'GpuPod' }, 0],
    [{ namespace: 'a', kind: 'GpuPod' }, 12],
    [{ namespace: 'b', kind: 'GpuPod' }, 1],
  ]);
});

test('endpoint tasks and workers are exported per endpoint', async () => {
  const registry = new Registry();
  const metrics = new FleetMetrics(registry, () => true);
  metrics.add({
    kind: 'ServerlessEndpoint',
    resources: () => [resource('a', 'queue'), resource('a', 'plain'), resource(undefined, undefined)],
    usage: (mr) =>
      mr.metadata.name === 'queue'
        ? { ...idle, tasks: { IN_QUEUE: 3, IN_PROGRESS: 1 }, workers: { desired: 4, running: 2 } }
        : mr.metadata.name === undefined
          ? { ...idle, tasks: { IN_QUEUE: 5 }, workers: { desired: 1, running: 0 } }
          : idle,
  });
  assert.deepEqual(await samples(registry, 'gpucloud_endpoint_tasks'), [
    [{ namespace: '', endpoint: '', status: 'IN_QUEUE' }, 5],
    [{ namespace: 'a', endpoint: 'queue', status: 'IN_PROGRESS' }, 1],
    [{ namespace: 'a', endpoint: 'queue', status: 'IN_QUEUE' }, 3],
  ]);
  assert.deepEqual(await samples(registry, 'gpucloud_endpoint_workers'), [
    [{ namespace: '', endpoint: '', state: 'desired' }, 1],
    [{ namespace: '', endpoint: '', state: 'running' }, 0],
    [{ namespace: 'a', endpoint: 'queue', state: 'desired' }, 4],
    [{ namespace: 'a', endpoint: 'queue', state: 'running' }, 2],
  ]);
});

test('the oldest deletion and the longest wait for Ready are exported per kind and namespace', async (t) => {
  t.mock.timers.enable({ apis: ['Date'], now: Date.parse('2026-01-01T10:00:00Z') });
  const registry = new Registry();
  const metrics = new FleetMetrics(registry, () => true);
  const ready = (status: string, at?: string) => ({
    conditions: [{ type: 'Ready', status, ...(at === undefined ? {} : { lastTransitionTime: at }) }],
  });
  metrics.add({
    kind: 'GpuPod',
    resources: () => [
      resource('a', 'd1', {}, { deletionTimestamp: '2026-01-01T09:59:00Z' }),
      resource(
        'a',
        'd2',
        {},
        {
          deletionTimestamp: '2026-01-01T09:50:00Z',
          creationTimestamp: '2026-01-01T08:00:00Z',
        },
      ),
      resource(undefined, 'd3', ready('False'), { deletionTimestamp: '2026-01-01T09:59:30Z' }),
      resource('a', 'r1', ready('False', '2026-01-01T09:58:00Z')),
      resource('a', 'r2', ready('Unknown', '2026-01-01T09:30:00Z')),
      resource('a', 'ok', ready('True', '2026-01-01T08:00:00Z')),
      resource('b', 'new', undefined, { creationTimestamp: '2026-01-01T09:59:50Z' }),
      resource('b', 'undated', ready('False')),
      resource('b', 'bad-date', ready('False', 'yesterday')),
      resource(
        'c',
        'done',
        {
          conditions: [
            { type: 'Ready', status: 'False', lastTransitionTime: '2026-01-01T07:00:00Z' },
            { type: 'Complete', status: 'True' },
          ],
        },
        {},
      ),
      resource(
        'c',
        'failed',
        {
          conditions: [
            { type: 'Ready', status: 'False', lastTransitionTime: '2026-01-01T07:00:00Z' },
            { type: 'Failed', status: 'True' },
          ],
        },
        {},
      ),
      resource(
        'c',
        'not-failed',
        {
          conditions: [
            { type: 'Ready', status: 'False', lastTransitionTime: '2026-01-01T09:00:00Z' },
            { type: 'Failed', status: 'False' },
          ],
        },
        { creationTimestamp: '2026-01-01T06:00:00Z' },
      ),
      resource(
        'd',
        'fallback',
        { conditions: [{ type: 'Synced', status: 'True' }] },
        {
          creationTimestamp: '2026-01-01T09:00:00Z',
        },
      ),
      resource('f', 'synced-first', {
        conditions: [
          { type: 'Synced', status: 'True', lastTransitionTime: '2026-01-01T09:59:00Z' },
          { type: 'Ready', status: 'False', lastTransitionTime: '2026-01-01T09:00:00Z' },
        ],
      }),
      resource(undefined, 'unnamespaced', {}, { creationTimestamp: '2026-01-01T09:59:58Z' }),
      resource(
        'g',
        'odd-condition',
        {
          conditions: [
            { type: 'Ready', status: 'False', lastTransitionTime: '2026-01-01T09:00:00Z' },
            { type: 5 },
          ],
        },
        { creationTimestamp: '2026-01-01T09:59:40Z' },
      ),
      resource('e', 'garbled', { conditions: 'none' }, { creationTimestamp: '2026-01-01T09:59:00Z' }),
    ],
  });
  metrics.add({ kind: 'GpuVm', resources: () => [] });
  assert.deepEqual(await samples(registry, 'gpucloud_deletion_age_seconds'), [
    [{ kind: 'GpuPod', namespace: '' }, 30],
    [{ kind: 'GpuPod', namespace: 'a' }, 600],
  ]);
  assert.deepEqual(await samples(registry, 'gpucloud_not_ready_age_seconds'), [
    [{ kind: 'GpuPod', namespace: '' }, 2],
    [{ kind: 'GpuPod', namespace: 'a' }, 1800],
    [{ kind: 'GpuPod', namespace: 'b' }, 10],
    [{ kind: 'GpuPod', namespace: 'c' }, 3600],
    [{ kind: 'GpuPod', namespace: 'd' }, 3600],
    [{ kind: 'GpuPod', namespace: 'e' }, 60],
    [{ kind: 'GpuPod', namespace: 'f' }, 3600],
    [{ kind: 'GpuPod', namespace: 'g' }, 20],
  ]);
});

test('time to Ready, drift, preemptions and refusals are counted for the kind that reports them', async (t) => {
  t.mock.timers.enable({ apis: ['Date'], now: Date.parse('2026-01-01T10:00:00Z') });
  const registry = new Registry();
  const metrics = new FleetMetrics(registry, () => false);
  const pods = metrics.add({ kind: 'GpuPod', resources: () => [] });
  const vms = metrics.add({ kind: 'GpuVm', resources: () => [] });
  const created = (creationTimestamp: string | undefined) =>
    ({ metadata: { creationTimestamp } }) as unknown as ManagedObject<unknown>;
  pods.becameReady(created('2026-01-01T09:59:45Z'));
  pods.becameReady(created('2026-01-01T10:00:30Z'));
  pods.becameReady(created(undefined));
  vms.becameReady(created('2026-01-01T09:00:00Z'));
  pods.drifted();
  pods.drifted();
  vms.preempted();
  pods.refused('QuotaExceeded');
  pods.refused('QuotaExceeded');
  vms.refused('InvalidSpec');

  const histogramMetric = registry.getSingleMetric('gpucloud_time_to_ready_seconds');
  assert.ok(histogramMetric);
  const values: Array<{ metricName?: string; labels: Record<string, unknown>; value: number }> = (
    await histogramMetric.get()
  ).values;
  const value = (name: string, labels: Record<string, string | number>) =>
    values.find((v) => v.metricName === name && Object.entries(labels).every(([k, l]) => v.labels[k] === l))
      ?.value;
  assert.equal(value('gpucloud_time_to_ready_seconds_count', { kind: 'GpuPod' }), 2);
  assert.equal(
    value('gpucloud_time_to_ready_seconds_sum', { kind: 'GpuPod' }),
    15,
    'a future creation counts 0',
  );
  assert.equal(value('gpucloud_time_to_ready_seconds_bucket', { kind: 'GpuPod', le: 1 }), 1);
  assert.equal(value('gpucloud_time_to_ready_seconds_bucket', { kind: 'GpuPod', le: 20 }), 2);
  assert.equal(value('gpucloud_time_to_ready_seconds_sum', { kind: 'GpuVm' }), 3600);

  assert.deepEqual(await samples(registry, 'gpucloud_drift_detections_total'), [[{ kind: 'GpuPod' }, 2]]);
  assert.deepEqual(await samples(registry, 'gpucloud_preemptions_total'), [[{ kind: 'GpuVm' }, 1]]);
  assert.deepEqual(await samples(registry, 'gpucloud_terminal_failures_total'), [
    [{ kind: 'GpuPod', reason: 'QuotaExceeded' }, 2],
    [{ kind: 'GpuVm', reason: 'InvalidSpec' }, 1],
  ]);
});
