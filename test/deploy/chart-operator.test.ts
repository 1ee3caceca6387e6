import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type InstalledChart, installChart } from '../support/chart.ts';
import {
  cloudObjects,
  isReady,
  manifests,
  type RunningOperator,
  resources,
  startOperator,
  useStack,
} from '../support/operator.ts';

// The chart's RBAC is enough for the real operator: a GpuPod lifecycle run entirely under the chart's
// ServiceAccount (leader election included), never as admin.
const NS = 'team-a';
const stack = useStack();
let chart: InstalledChart;
let operator: RunningOperator;

describe("the operator under the chart's ServiceAccount", () => {
  before(async () => {
    chart = await installChart(stack.plane());
    await stack.cluster().ensureNamespace(NS);
    operator = await startOperator(stack.plane(), stack.sim(), {
      kubeconfigPath: chart.kubeconfigPath,
      flags: ['--leader-elect', 'true', '--lease-namespace', chart.namespace, '--lease-name', chart.release],
    });
  });
  after(async () => {
    await operator?.stop();
    await chart?.uninstall();
  });

  test('creates, pauses and deletes a GpuPod with no permission error', async () => {
    const cluster = stack.cluster();
    await cluster.create(resources.secret, NS, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'token' },
      stringData: { value: 's3cret' },
    });
    await cluster.create(
      resources.gpuPod,
      NS,
      manifests.gpuPod('rbac-pod', {
        environmentVars: [{ key: 'TOKEN', valueFrom: { secretKeyRef: { name: 'token', key: 'value' } } }],
      }),
    );
    await cluster.waitFor(resources.gpuPod, NS, 'rbac-pod', isReady('Running'), 'Ready');
    await cluster.patch(resources.gpuPod, NS, 'rbac-pod', { spec: { paused: true } });
    await cluster.waitFor(resources.gpuPod, NS, 'rbac-pod', isReady('Paused'), 'Paused');
    await cluster.delete(resources.gpuPod, NS, 'rbac-pod');
    await cluster.waitFor(resources.gpuPod, NS, 'rbac-pod', (obj) => obj === undefined, 'gone');
    assert.equal(cloudObjects(stack.sim()).pods('rbac-pod')[0]?.environment.TOKEN, 's3cret');
    assert.ok(
      (await cluster.events(NS, 'rbac-pod')).some((event) => event.reason === 'Created'),
      'events recorded',
    );
    const denied = operator.logs.filter((line) => /forbidden|HTTP 403/i.test(line));
    assert.deepEqual(denied, [], 'no request was forbidden');
  });
});
