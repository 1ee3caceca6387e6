import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { leases, nodes, objectPath } from '../../src/kube/resource-type.ts';
import { type InstalledChart, installChart } from '../support/chart.ts';
import {
  API_KEY,
  cloudObjects,
  condition,
  isReady,
  manifests,
  objectSchema,
  type RunningOperator,
  resources,
  startOperator,
  useStack,
} from '../support/operator.ts';

// The chart's RBAC is enough for the real operator: a GpuPod lifecycle run entirely under the chart's
// ServiceAccount (leader election included), never as admin. With its defaults the chart grants nothing for
// virtual nodes and the operator runs none; with virtualNode.enabled it grants what they need.
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

  test('tells a ProviderConfig that asks for a virtual node why none appears, with no permission error', async () => {
    const cluster = stack.cluster();
    await createAccount(chart.namespace, 'team-nodes-off');
    const config = await cluster.waitFor(
      resources.providerConfig,
      '',
      'team-nodes-off',
      (obj) => condition(obj, 'VirtualNode') !== undefined,
      'a VirtualNode condition',
    );
    assert.equal(condition(config, 'Ready')?.status, 'True');
    assert.deepEqual(
      { ...condition(config, 'VirtualNode'), message: undefined, lastTransitionTime: undefined },
      {
        type: 'VirtualNode',
        status: 'False',
        reason: 'VirtualNodesDisabled',
        message: undefined,
        lastTransitionTime: undefined,
        observedGeneration: 1,
      },
    );
    assert.match(condition(config, 'VirtualNode')?.message ?? '', /virtualNode\.enabled=true/);
    assert.equal(await cluster.get(nodes, '', 'gpucloud-team-nodes-off'), undefined, 'no node registered');
    // No Node or Pod watch was started: under these grants it would have been refused.
    const denied = operator.logs.filter((line) => /forbidden|HTTP 403/i.test(line));
    assert.deepEqual(denied, [], 'no request was forbidden');
  });
});

describe("the operator with virtual nodes, under the chart's ServiceAccount with virtualNode.enabled", () => {
  let nodesChart: InstalledChart;
  let nodesOperator: RunningOperator;

  before(async () => {
    nodesChart = await installChart(stack.plane(), {
      release: 'nodes',
      namespace: 'nodes-system',
      values: { virtualNode: { enabled: true } },
    });
    nodesOperator = await startOperator(stack.plane(), stack.sim(), {
      kubeconfigPath: nodesChart.kubeconfigPath,
      flags: ['--virtual-nodes', 'true'],
    });
  });
  after(async () => {
    await nodesOperator?.stop();
    await nodesChart?.uninstall();
  });

  test('registers the node of a ProviderConfig that asks for one, and its Lease, with no permission error', async () => {
    const cluster = stack.cluster();
    await createAccount(nodesChart.namespace, 'team-nodes-on');
    const name = 'gpucloud-team-nodes-on';
    await cluster.waitFor(nodes, '', name, (node) => node !== undefined, 'registered');
    await cluster.waitFor(leases, 'kube-node-lease', name, (lease) => lease !== undefined, 'its Lease');
    const config = await cluster.get(resources.providerConfig, '', 'team-nodes-on');
    assert.equal(condition(config, 'VirtualNode'), undefined, 'the node tells its own state');
    const denied = nodesOperator.logs.filter((line) => /forbidden|HTTP 403/i.test(line));
    assert.deepEqual(denied, [], 'no request was forbidden');
  });

  test('drops the VirtualNodesDisabled an operator without virtual nodes left on a ProviderConfig', async () => {
    const cluster = stack.cluster();
    const name = 'team-nodes-back';
    await createAccount(nodesChart.namespace, name);
    const ready = await cluster.waitFor(resources.providerConfig, '', name, isReady('KeyAccepted'), 'Ready');
    // The status as the operator of the first describe writes it for such a config: Ready, and the condition.
    const left = await cluster.client.request(objectSchema, {
      method: 'PATCH',
      path: `${objectPath(resources.providerConfig, { namespace: '', name })}/status`,
      body: {
        status: {
          conditions: [
            condition(ready, 'Ready'),
            {
              type: 'VirtualNode',
              status: 'False',
              reason: 'VirtualNodesDisabled',
              message: 'the operator runs without virtual nodes',
              lastTransitionTime: new Date().toISOString(),
            },
          ],
        },
      },
    });
    assert.equal(condition(left, 'VirtualNode')?.reason, 'VirtualNodesDisabled');
    const written = left.metadata.resourceVersion;
    await cluster.waitFor(
      resources.providerConfig,
      '',
      name,
      (obj) =>
        obj?.metadata.resourceVersion !== written &&
        condition(obj, 'VirtualNode') === undefined &&
        condition(obj, 'Ready')?.status === 'True',
      'the VirtualNode condition dropped by the operator, Ready kept',
    );
  });
});

/** A ProviderConfig of the team's key, kept in `keyNamespace`, that asks for a virtual node. */
async function createAccount(keyNamespace: string, name: string): Promise<void> {
  const cluster = stack.cluster();
  await cluster.create(resources.secret, keyNamespace, {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: `${name}-key` },
    stringData: { key: TEAM_KEY },
  });
  await cluster.create(resources.providerConfig, '', {
    apiVersion: 'gpucloud.io/v1alpha1',
    kind: 'ProviderConfig',
    metadata: { name },
    spec: {
      apiUrl: stack.sim().url,
      credentials: { secretRef: { namespace: keyNamespace, name: `${name}-key`, key: 'key' } },
      namespaces: { names: [NS] },
      virtualNode: { enabled: true },
    },
  });
}
