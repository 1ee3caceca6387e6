import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { z } from 'zod';
import { GpuCloudClient } from '../../src/api/client.ts';
import { objectPath } from '../../src/kube/resource-type.ts';
import {
  API_KEY,
  isReady,
  manifests,
  type RunningOperator,
  resources,
  startOperator,
  type TestObject,
  useStack,
} from '../support/operator.ts';
import { poll } from '../support/until.ts';

// The operator's own queue autoscaling, against the simulator: a queue driven up and down, the worker
// counts the cloud saw over time, and the schema that keeps kubectl scale and an HPA off it.
const NS = 'autoscaling';
const stack = useStack();
let operator: RunningOperator;
let cloud: GpuCloudClient;

const autoscaled = (name: string, autoscaling: Record<string, unknown>) => {
  const manifest = manifests.serverlessEndpoint(name, { autoscaling });
  delete (manifest.spec as Record<string, unknown>).workers;
  return manifest;
};
const workersInCloud = (name: string) =>
  stack
    .sim()
    .state.snapshot()
    .endpoints.find((endpoint) => endpoint.name === name)?.totalWorkers;
const decision = (obj: TestObject | undefined) =>
  (obj?.status as { autoscaling?: { desiredWorkers: number; reason: string; queue: number } } | undefined)
    ?.autoscaling;

/** Samples the cloud's worker count every 50 ms until stopped: what the cloud saw over time. */
function sampleWorkers(name: string) {
  const seen: number[] = [];
  const sample = () => {
    const workers = workersInCloud(name);
    if (workers !== undefined && seen.at(-1) !== workers) seen.push(workers);
  };
  const timer = setInterval(sample, 50);
  // The last sample is taken at the stop, so a change seen by the test just before it is in the series too.
  return {
    seen,
    stop: () => {
      clearInterval(timer);
      sample();
    },
  };
}

describe('queue autoscaling', () => {
  before(async () => {
    await stack.cluster().ensureNamespace(NS);
    cloud = new GpuCloudClient({ baseUrl: stack.sim().url, apiKey: API_KEY });
    operator = await startOperator(stack.plane(), stack.sim(), { flags: ['--queue-interval', '1'] });
  });
  after(async () => {
    await operator?.stop();
    await cloud?.close();
  });

  test('a queue scales an endpoint from zero up, and back to zero once it drains, without flapping', async () => {
    const cluster = stack.cluster();
    const spec = { minWorkers: 0, maxWorkers: 3, targetQueuePerWorker: 2, scaleDownDelaySeconds: 3 };
    await cluster.create(resources.serverlessEndpoint, NS, autoscaled('burst', spec));
    const ready = await cluster.waitFor(resources.serverlessEndpoint, NS, 'burst', isReady(), 'Ready');
    assert.equal(workersInCloud('burst'), 0, 'created with minWorkers');
    assert.equal(ready?.spec?.workers, undefined, 'workers is not late-initialised under autoscaling');
    const samples = sampleWorkers('burst');
    try {
      const id = String(ready?.status?.id);
      for (let task = 0; task < 6; task++) await cloud.serverless.tasks.submit(id, { input: { task } });
      await poll(
        async () => workersInCloud('burst'),
        (workers) => workers === 3,
        'scaled up to ceil(6 / 2) = 3',
        20_000,
      );
      const counts = await poll(
        () => cloud.serverless.tasks.count(id),
        (c) => c.success === 6,
        'every task done',
        20_000,
      );
      assert.equal(counts.success, 6);
      const down = await cluster.waitFor(
        resources.serverlessEndpoint,
        NS,
        'burst',
        (obj) =>
          decision(obj)?.reason === 'ScaleDown' ||
          (workersInCloud('burst') === 0 && decision(obj)?.queue === 0),
        'scaled down',
        20_000,
      );
      await poll(
        async () => workersInCloud('burst'),
        (workers) => workers === 0,
        'back to zero',
        20_000,
      );
      assert.equal(decision(down)?.queue, 0);
    } finally {
      samples.stop();
    }
    assert.deepEqual(samples.seen, [0, 3, 0], 'one step up, one step down: no flapping');
  });

  test('task counts stay fresh within the interval, at one count call per interval', async () => {
    const cluster = stack.cluster();
    const spec = { minWorkers: 1, maxWorkers: 2, targetQueuePerWorker: 5 };
    await cluster.create(resources.serverlessEndpoint, NS, autoscaled('steady', spec));
    const ready = await cluster.waitFor(resources.serverlessEndpoint, NS, 'steady', isReady(), 'Ready');
    await cluster.waitFor(
      resources.serverlessEndpoint,
      NS,
      'steady',
      (obj) => decision(obj) !== undefined,
      'decided',
    );
    const id = String(ready?.status?.id);
    const counted = () =>
      stack
        .sim()
        .calls.log()
        .filter((call) => call.operation === 'serverless.tasks.count' && call.params.id === id).length;
    const before = counted();
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    const calls = counted() - before;
    // --queue-interval 1: one count a second, give or take the reconcile's own time.
    assert.ok(calls >= 2 && calls <= 7, `${calls} count calls in 5 s`);
    const status = await cluster.get(resources.serverlessEndpoint, NS, 'steady');
    assert.deepEqual(decision(status), { desiredWorkers: 1, reason: 'AtMinimum', queue: 0 });
  });

  test('workers and autoscaling exclude each other: kubectl scale and an HPA are refused', async () => {
    const cluster = stack.cluster();
    const spec = { minWorkers: 1, maxWorkers: 2, targetQueuePerWorker: 5 };
    await assert.rejects(
      cluster.create(resources.serverlessEndpoint, NS, {
        ...autoscaled('both', spec),
        spec: { ...autoscaled('both', spec).spec, workers: 2 },
      }),
      /autoscaling sets the workers itself/,
    );
    await cluster.create(resources.serverlessEndpoint, NS, autoscaled('scaled', spec));
    const scale = `${objectPath(resources.serverlessEndpoint, { namespace: NS, name: 'scaled' })}/scale`;
    await assert.rejects(
      cluster.client.request(z.unknown(), { method: 'PATCH', path: scale, body: { spec: { replicas: 2 } } }),
      /autoscaling sets the workers itself/,
    );
    await assert.rejects(
      cluster.create(resources.serverlessEndpoint, NS, {
        ...autoscaled('balanced', spec),
        spec: { ...autoscaled('balanced', spec).spec, serviceMode: 'ALB' },
      }),
      /autoscaling scales on the task queue: set serviceMode: QUEUE/,
    );
    await assert.rejects(
      cluster.create(resources.serverlessEndpoint, NS, autoscaled('inverted', { ...spec, minWorkers: 3 })),
      /minWorkers must not exceed maxWorkers/,
    );
    // Handing the count to the autoscaler is the one way to remove workers.
    await cluster.create(
      resources.serverlessEndpoint,
      NS,
      manifests.serverlessEndpoint('handover', { workers: 2 }),
    );
    await cluster.patch(resources.serverlessEndpoint, NS, 'handover', {
      spec: { workers: null, autoscaling: spec },
    });
    await cluster.create(
      resources.serverlessEndpoint,
      NS,
      manifests.serverlessEndpoint('fixed', { workers: 2 }),
    );
    await assert.rejects(
      cluster.patch(resources.serverlessEndpoint, NS, 'fixed', { spec: { workers: null } }),
      /workers cannot be removed/,
    );
  });
});
