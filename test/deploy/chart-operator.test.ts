import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type InstalledChart, installChart } from '../support/chart.ts';
import {
  API_KEY,
  cloudObjects,
  condition,
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
const TEAM_KEY = 'chart-rbac-team-key';
const stack = useStack({ apiKeys: [API_KEY, { key: TEAM_KEY, org: 'team-rbac' }] });
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

  test('serves a ProviderConfig whose key Secret is in the release namespace, with no permission error', async () => {
    const cluster = stack.cluster();
    const secret = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'team-key' },
      stringData: { key: TEAM_KEY },
    };
    await cluster.create(resources.secret, chart.namespace, secret);
    await cluster.create(resources.providerConfig, '', {
      apiVersion: 'gpucloud.io/v1alpha1',
      kind: 'ProviderConfig',
      metadata: { name: 'team-rbac' },
      spec: {
        apiUrl: stack.sim().url,
        credentials: { secretRef: { namespace: chart.namespace, name: 'team-key', key: 'key' } },
        namespaces: { selector: { matchLabels: { 'kubernetes.io/metadata.name': NS } } },
      },
    });
    await cluster.waitFor(resources.providerConfig, '', 'team-rbac', isReady('KeyAccepted'), 'Ready');
    const pod = manifests.gpuPod('team-pod', { providerConfigRef: { name: 'team-rbac' } });
    await cluster.create(resources.gpuPod, NS, pod);
    await cluster.waitFor(resources.gpuPod, NS, 'team-pod', isReady('Running'), 'Ready');
    assert.equal(cloudObjects(stack.sim()).pods('team-pod')[0]?.org, 'team-rbac');
    const config = await cluster.waitFor(
      resources.providerConfig,
      '',
      'team-rbac',
      (obj) => obj?.status?.users === 1,
      'one user',
    );
    assert.equal(condition(config, 'Ready')?.status, 'True');
    const denied = operator.logs.filter((line) => /forbidden|HTTP 403/i.test(line));
    assert.deepEqual(denied, [], 'no request was forbidden');
  });
});
