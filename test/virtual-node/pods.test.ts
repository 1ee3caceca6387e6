import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { z } from 'zod';
import { isStatus, type KubeClient } from '../../src/kube/client.ts';
import { collectionPath, deployments, objectPath, pods } from '../../src/kube/resource-type.ts';
import { type SchedulingCluster, startSchedulingCluster } from '../../src/local/node-cluster.ts';
import { clientAs, grantPods, grantTenant } from '../support/impersonation.ts';
import { type RunningOperator, resources, startOperator } from '../support/operator.ts';
import { poll } from '../support/until.ts';
import {
  cloudCreates,
  createAccountKey,
  listGpuPods as listGpuPodsOf,
  listPods as listPodsOf,
  liveCloudPods as liveCloudPodsOf,
  readPod as readPodOf,
  running,
  useTeamsStack,
  VIRTUAL_NODE_TOLERATION,
  virtualNodeProviderConfig,
  waitForDefaultServiceAccount,
  waitForNodeReady,
} from '../support/virtual-node.ts';

// Pods on the virtual node become cloud pods, on the real apiserver with kube-scheduler and the workload
// controllers of kube-controller-manager, the operator in-process and the simulator over HTTP: a Deployment
// runs, scales, rolls out and goes with no cloud pod left or doubled; what the node cannot run fails with
// no cloud call; and what a tenant can do through a Pod, and to the GpuPod of their Pod, as that tenant.
const TEAM_A_KEY = 'team-a-pods-key';
const TEAM_B_KEY = 'team-b-pods-key';
const stack = useTeamsStack({ 'team-a': TEAM_A_KEY, 'team-b': TEAM_B_KEY });
const NS = 'team-a';
const OTHER_NS = 'team-b';
const KEY_NS = 'gpucloud-system';
const TENANT = 'alice';

let admin: KubeClient;
let operator: RunningOperator;
let scheduling: SchedulingCluster | undefined;

const providerConfig = (name: string, namespace: string) =>
  virtualNodeProviderConfig({ name, namespace, apiUrl: stack.sim().url, keyNamespace: KEY_NS });

function deployment(image: string, replicas: number) {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'llm' },
    spec: {
      replicas,
      selector: { matchLabels: { app: 'llm' } },
      // One Pod at a time, the new one Ready before an old one goes.
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } },
      template: {
        metadata: { labels: { app: 'llm' } },
        spec: {
          nodeSelector: { 'gpucloud.io/virtual-node': 'true', 'gpucloud.io/provider-config': 'team-a' },
          tolerations: [VIRTUAL_NODE_TOLERATION],
          containers: [{ name: 'main', image, resources: { limits: { 'nvidia.com/gpu': '1' } } }],
        },
      },
    },
  };
}

/** A Pod bound by hand to `node`, as the scheduler's binding would. */
const podOn = (name: string, node: string) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name },
  spec: {
    nodeName: node,
    tolerations: [VIRTUAL_NODE_TOLERATION],
    containers: [{ name: 'main', image: 'example/app:1', resources: { limits: { 'nvidia.com/gpu': '1' } } }],
  },
});

const listPods = (namespace = NS) => listPodsOf(admin, namespace);
const listGpuPods = (namespace = NS) => listGpuPodsOf(admin, namespace);
const readPod = (name: string, namespace = NS) => readPodOf(admin, namespace, name);
const liveCloudPods = () => liveCloudPodsOf(stack.sim());
const creates = () => cloudCreates(stack.sim());

describe('Pods on the virtual node', () => {
  before(async () => {
    const cluster = stack.cluster();
    admin = cluster.client;
    for (const namespace of [KEY_NS, NS, OTHER_NS]) await cluster.ensureNamespace(namespace);
    for (const [name, key] of [
      ['team-a', TEAM_A_KEY],
      ['team-b', TEAM_B_KEY],
    ] as const) {
      await createAccountKey(admin, KEY_NS, name, key);
    }
    // The workload controllers, node lifecycle (it lifts the not-ready taint a node registers with) and the scheduler.
    scheduling = await startSchedulingCluster(stack.plane());
    operator = await startOperator(stack.plane(), stack.sim(), {
      apiKey: 'operator-default-key',
      flags: ['--virtual-nodes', 'true', '--virtual-node-address', '10.1.2.3'],
    });
    await cluster.create(resources.providerConfig, '', providerConfig('team-a', NS));
    await cluster.create(resources.providerConfig, '', providerConfig('team-b', OTHER_NS));
    for (const node of ['gpucloud-team-a', 'gpucloud-team-b']) await waitForNodeReady(admin, node);
    await waitForDefaultServiceAccount(admin, NS);
  });
  after(async () => {
    await operator?.stop();
    await scheduling?.stop();
  });

  test('a Deployment of 3 asking for a GPU each: 3 Pods Running on the virtual node, 3 cloud pods', async () => {
    await admin.request(z.unknown(), {
      method: 'POST',
      path: collectionPath(deployments, NS),
      body: deployment('example/llm:1', 3),
    });
    const up = await poll(
      listPods,
      (items) => items.length === 3 && items.every(running),
      '3 Pods Running and ready',
      90_000,
    );
    for (const pod of up) {
      assert.equal(pod.spec.nodeName, 'gpucloud-team-a');
      assert.equal(pod.status.hostIP, '10.1.2.3');
      const id = pod.metadata.annotations?.['gpucloud.io/external-id'];
      assert.ok(id, 'the cloud id named for the kubelet API');
      assert.equal(pod.status.containerStatuses?.[0]?.containerID, `gpucloud://${id}`);
      assert.ok(pod.metadata.finalizers?.includes('gpucloud.io/virtual-node'));
    }
    const cloud = liveCloudPods();
    assert.deepEqual(cloud.map((p) => p.name).sort(), up.map((p) => p.metadata.name).sort());
    assert.ok(
      cloud.every((p) => p.org === 'team-a'),
      'in the account of the node’s ProviderConfig',
    );
    assert.equal(creates().length, 3);
  });

  test('scaled to 1: two cloud pods deleted, one left; no Pod goes before its cloud pod is deleted', async () => {
    const before = (await listPods()).map((pod) => pod.metadata.name);
    // A slow cloud delete: a Pod let go before its GpuPod is gone would be seen gone with its cloud pod running.
    stack.sim().faults.set({ latencyMs: 1500, operations: ['pods.delete'] });
    try {
      await admin.request(z.unknown(), {
        method: 'PATCH',
        path: objectPath(deployments, { namespace: NS, name: 'llm' }),
        body: { spec: { replicas: 1 } },
      });
      const deadline = Date.now() + 60_000;
      for (;;) {
        const present = new Set((await listPods()).map((pod) => pod.metadata.name));
        const runningInCloud = liveCloudPods()
          .filter((pod) => pod.status === 'RUNNING')
          .map((pod) => pod.name);
        const outlived = before.filter((name) => !present.has(name) && runningInCloud.includes(name));
        assert.deepEqual(outlived, [], 'a Pod gone while its cloud pod still runs');
        if (present.size === 1 && liveCloudPods().length === 1) break;
        assert.ok(Date.now() < deadline, `still ${[...present].join(', ')} after 60 s`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    } finally {
      stack.sim().faults.reset();
    }
    const left = await listPods();
    assert.deepEqual(
      liveCloudPods().map((p) => p.name),
      left.map((p) => p.metadata.name),
    );
    assert.equal((await listGpuPods()).length, 1);
  });

  test('a rollout to a new image: a new cloud pod of the new image, the old one gone, never two for one Pod', async () => {
    const [old] = await listPods();
    await admin.request(z.unknown(), {
      method: 'PATCH',
      path: objectPath(deployments, { namespace: NS, name: 'llm' }),
      body: deployment('example/llm:2', 1),
    });
    const [now] = await poll(
      listPods,
      (items) => items.length === 1 && items[0]?.metadata.name !== old?.metadata.name && items.every(running),
      'the new Pod Running, the old one gone',
      90_000,
    );
    const gpuPods = await poll(listGpuPods, (items) => items.length === 1, 'one GpuPod');
    assert.equal(gpuPods[0]?.spec.image, 'example/llm:2');
    await poll(
      async () => liveCloudPods().map((p) => p.name),
      (names) => names.length === 1 && names[0] === now?.metadata.name,
      'the one cloud pod the new Pod’s',
    );
    // 3 Pods, then one more for the rollout: one create each, none twice.
    assert.equal(creates().length, 4);
  });

  test('deleting the Deployment leaves no Pod, no GpuPod and no cloud pod', async () => {
    await admin.request(z.unknown(), {
      method: 'DELETE',
      path: objectPath(deployments, { namespace: NS, name: 'llm' }),
      body: { propagationPolicy: 'Foreground' },
    });
    await poll(listPods, (items) => items.length === 0, 'no Pod', 60_000);
    await poll(listGpuPods, (items) => items.length === 0, 'no GpuPod');
    assert.deepEqual(liveCloudPods(), []);
  });

  test('a Pod the node cannot run fails with the reason, and no cloud call', async () => {
    const before = creates().length;
    await admin.request(z.unknown(), {
      method: 'POST',
      path: collectionPath(pods, NS),
      body: {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'two-containers' },
        spec: {
          nodeName: 'gpucloud-team-a',
          tolerations: [VIRTUAL_NODE_TOLERATION],
          containers: [
            { name: 'main', image: 'a:1', resources: { limits: { 'nvidia.com/gpu': '1' } } },
            { name: 'sidecar', image: 'b:1' },
          ],
        },
      },
    });
    const refused = await poll(
      () => readPod('two-containers'),
      (pod) => pod.status.phase === 'Failed',
      'the Pod refused',
    );
    assert.equal(refused.status.reason, 'UnsupportedPodSpec');
    assert.match(refused.status.message ?? '', /one container per Pod; this Pod has 2 \(main, sidecar\)/);
    assert.equal(creates().length, before);
    assert.equal((await listGpuPods()).length, 0);
    // Deleted, it goes at once (the node's final delete), having held nothing.
    await admin.request(z.unknown(), {
      method: 'DELETE',
      path: objectPath(pods, { namespace: NS, name: 'two-containers' }),
    });
    await poll(listPods, (items) => items.length === 0, 'the refused Pod gone');
  });

  describe('a tenant of an allowed namespace', () => {
    let tenant: KubeClient;
    before(async () => {
      await grantTenant(admin, NS, TENANT, ['get', 'list', 'watch', 'create', 'patch', 'update', 'delete']);
      await grantPods(admin, NS, TENANT);
      tenant = clientAs(stack.plane(), TENANT);
    });

    test('cannot reach another account through a Pod: bound by hand to its node, the Pod is refused, no cloud call', async () => {
      const before = creates().length;
      await tenant.request(z.unknown(), {
        method: 'POST',
        path: collectionPath(pods, NS),
        body: podOn('elsewhere', 'gpucloud-team-b'),
      });
      const refused = await poll(
        () => readPod('elsewhere'),
        (pod) => pod.status.phase === 'Failed',
        'the Pod refused',
      );
      assert.equal(refused.status.reason, 'NamespaceNotAllowed');
      assert.equal(creates().length, before);
      assert.ok(
        stack
          .sim()
          .state.snapshot()
          .pods.every((p) => p.org !== 'team-b'),
        'nothing in the other account',
      );
    });

    test('the GpuPod of their Pod: an edit is put back; a deletion is a restart, one cloud pod for the Pod at a time', async () => {
      await tenant.request(z.unknown(), {
        method: 'POST',
        path: collectionPath(pods, NS),
        body: podOn('mine', 'gpucloud-team-a'),
      });
      const first = await poll(() => readPod('mine'), running, 'the Pod Running', 60_000);
      const firstId = first.metadata.annotations?.['gpucloud.io/external-id'];
      const gpuPodPath = objectPath(resources.gpuPod, { namespace: NS, name: 'mine' });
      await tenant.request(z.unknown(), {
        method: 'PATCH',
        path: gpuPodPath,
        body: { spec: { paused: true, deletionPolicy: 'Orphan' } },
      });
      const gpuPodSchema = z.looseObject({
        spec: z.looseObject({ paused: z.boolean().optional(), deletionPolicy: z.string().optional() }),
      });
      await poll(
        () => admin.request(gpuPodSchema, { method: 'GET', path: gpuPodPath }),
        (gp) => gp.spec.paused === false && gp.spec.deletionPolicy === 'Delete',
        'the GpuPod put back as the Pod says',
      );
      await tenant.request(z.unknown(), { method: 'DELETE', path: gpuPodPath });
      const again = await poll(
        () => readPod('mine'),
        (pod) => running(pod) && pod.metadata.annotations?.['gpucloud.io/external-id'] !== firstId,
        'the Pod Running on a new cloud pod',
        60_000,
      );
      assert.ok(again.metadata.annotations?.['gpucloud.io/external-id']);
      assert.deepEqual(
        liveCloudPods().filter((p) => p.name === 'mine').length,
        1,
        'the first cloud pod deleted before the second',
      );
      await tenant.request(z.unknown(), {
        method: 'DELETE',
        path: objectPath(pods, { namespace: NS, name: 'mine' }),
      });
      await poll(
        () =>
          readPod('mine').catch((error: unknown) =>
            isStatus(error, 404) ? undefined : Promise.reject(error),
          ),
        (pod) => pod === undefined,
        'the Pod gone',
        60_000,
      );
      assert.deepEqual(
        liveCloudPods().filter((p) => p.name === 'mine'),
        [],
      );
    });
  });

  test('turned off with a Pod running on it: the node drains, each cloud pod deleted and each Pod gone, then goes', async () => {
    const NODE_B = 'gpucloud-team-b';
    await waitForDefaultServiceAccount(admin, OTHER_NS);
    await admin.request(z.unknown(), {
      method: 'POST',
      path: collectionPath(pods, OTHER_NS),
      body: podOn('drained', NODE_B),
    });
    await poll(() => readPod('drained', OTHER_NS), running, 'the Pod Running', 60_000);
    const teamB = () => liveCloudPods().filter((p) => p.org === 'team-b');
    assert.equal(teamB().length, 1);
    await stack
      .cluster()
      .patch(resources.providerConfig, '', 'team-b', { spec: { virtualNode: { enabled: false } } });
    await poll(
      () =>
        admin
          .request(z.unknown(), { method: 'GET', path: `/api/v1/nodes/${NODE_B}` })
          .then(() => 'there')
          .catch((error: unknown) => (isStatus(error, 404) ? 'gone' : Promise.reject(error))),
      (node) => node === 'gone',
      'the node deregistered',
      90_000,
    );
    // Deleted only once nothing of it was left: no cloud pod billing, no Pod held by its finalizer.
    assert.deepEqual(teamB(), []);
    await assert.rejects(readPod('drained', OTHER_NS), (error: unknown) => isStatus(error, 404));
  });

  test('its ProviderConfig deleted with a Pod running on the node: drained, the node and then the ProviderConfig gone', async () => {
    const NODE_A = 'gpucloud-team-a';
    await admin.request(z.unknown(), {
      method: 'POST',
      path: collectionPath(pods, NS),
      body: podOn('last', NODE_A),
    });
    await poll(() => readPod('last'), running, 'the Pod Running', 60_000);
    const teamA = () => liveCloudPods().filter((p) => p.org === 'team-a');
    assert.equal(teamA().length, 1);
    await admin.request(z.unknown(), {
      method: 'DELETE',
      path: objectPath(resources.providerConfig, { namespace: '', name: 'team-a' }),
    });
    const gone = (path: string) => () =>
      admin
        .request(z.unknown(), { method: 'GET', path })
        .then(() => false)
        .catch((error: unknown) => (isStatus(error, 404) ? true : Promise.reject(error)));
    await poll(gone(`/api/v1/nodes/${NODE_A}`), (done) => done, 'the node deregistered', 90_000);
    assert.deepEqual(teamA(), [], 'its Pod’s cloud pod deleted through the account before the node went');
    await assert.rejects(readPod('last'), (error: unknown) => isStatus(error, 404));
    await poll(
      gone(objectPath(resources.providerConfig, { namespace: '', name: 'team-a' })),
      (done) => done,
      'the ProviderConfig gone, its last user gone',
      60_000,
    );
  });
});
