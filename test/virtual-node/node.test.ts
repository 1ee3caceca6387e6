import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { z } from 'zod';
import { isStatus, type KubeClient } from '../../src/kube/client.ts';
import { collectionPath, leases, nodes, objectPath, pods } from '../../src/kube/resource-type.ts';
import { LEASE_DURATION_SECONDS } from '../../src/virtual-node/cadence.ts';
import { clientAs, grantPods, grantTenant } from '../support/impersonation.ts';
import { type RunningOperator, resources, startOperator } from '../support/operator.ts';
import { poll, until } from '../support/until.ts';
import { createAccountKey, createDefaultServiceAccount, useTeamsStack } from '../support/virtual-node.ts';

// The virtual node on the real apiserver, the operator in-process and the simulator over HTTP: registered
// and kept alive as a kubelet is, deregistered when turned off or when its ProviderConfig goes, and what a
// tenant of another namespace can do to it (as that tenant, by impersonation).
const TEAM_KEY = 'team-a-vnode-key';
const stack = useTeamsStack({ 'team-a': TEAM_KEY });
const CONFIG = 'team-a';
const NODE = 'gpucloud-team-a';
const ALLOWED_NS = 'team-a';
const OTHER_NS = 'team-b';
const TENANT = 'bob';
const KEY_NS = 'gpucloud-system';

const nodeSchema = z.looseObject({
  metadata: z.looseObject({
    uid: z.string(),
    labels: z.record(z.string(), z.string()),
    annotations: z.record(z.string(), z.string()).optional(),
    ownerReferences: z.array(z.looseObject({ kind: z.string(), name: z.string() })).optional(),
  }),
  spec: z.looseObject({ taints: z.array(z.looseObject({ key: z.string(), effect: z.string() })).optional() }),
  status: z
    .looseObject({
      conditions: z
        .array(z.looseObject({ type: z.string(), status: z.string(), reason: z.string() }))
        .optional(),
      capacity: z.record(z.string(), z.string()).optional(),
      allocatable: z.record(z.string(), z.string()).optional(),
      addresses: z.array(z.looseObject({ type: z.string(), address: z.string() })).optional(),
      daemonEndpoints: z.looseObject({ kubeletEndpoint: z.looseObject({ Port: z.number() }) }).optional(),
    })
    .optional(),
});
type Node = z.output<typeof nodeSchema>;
const leaseSchema = z.looseObject({
  metadata: z.looseObject({ ownerReferences: z.array(z.looseObject({ kind: z.string(), uid: z.string() })) }),
  spec: z.looseObject({
    holderIdentity: z.string(),
    leaseDurationSeconds: z.number(),
    renewTime: z.string(),
  }),
});
const podSchema = z.looseObject({
  status: z.looseObject({ phase: z.string(), reason: z.string().optional(), message: z.string().optional() }),
});

let operator: RunningOperator;
let admin: KubeClient;

async function readNode(): Promise<Node | undefined> {
  try {
    return await admin.request(nodeSchema, {
      method: 'GET',
      path: objectPath(nodes, { namespace: '', name: NODE }),
    });
  } catch (error) {
    if (isStatus(error, 404)) return undefined;
    throw error;
  }
}

const ready = (node: Node | undefined) =>
  node?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;

function providerConfig(virtualNode: Record<string, unknown> | undefined) {
  return {
    apiVersion: 'gpucloud.io/v1alpha1',
    kind: 'ProviderConfig',
    metadata: { name: CONFIG },
    spec: {
      apiUrl: stack.sim().url,
      credentials: { secretRef: { namespace: KEY_NS, name: 'team-a-key', key: 'api-key' } },
      namespaces: { names: [ALLOWED_NS] },
      guardrails: { gpuTypes: ['NVIDIA L40S', 'NVIDIA GeForce RTX 4090'], maxLiveGpus: 12 },
      ...(virtualNode ? { virtualNode } : {}),
    },
  };
}

function podOn(name: string) {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name },
    spec: {
      nodeName: NODE,
      tolerations: [{ key: 'gpucloud.io/virtual-node', operator: 'Exists', effect: 'NoSchedule' }],
      containers: [
        { name: 'main', image: 'example/app:1', resources: { limits: { 'nvidia.com/gpu': '1' } } },
      ],
    },
  };
}

/** Calls the operator made to the simulator that create anything: a refusal must make none. */
describe('the virtual node of a ProviderConfig', () => {
  before(async () => {
    const cluster = stack.cluster();
    admin = cluster.client;
    for (const namespace of [KEY_NS, ALLOWED_NS, OTHER_NS]) await cluster.ensureNamespace(namespace);
    // No controller-manager here to make each namespace's default ServiceAccount, which Pod admission wants.
    for (const namespace of [ALLOWED_NS, OTHER_NS]) {
      await createDefaultServiceAccount(admin, namespace);
    }
    await createAccountKey(admin, KEY_NS, 'team-a', TEAM_KEY);
    operator = await startOperator(stack.plane(), stack.sim(), {
      apiKey: 'operator-default-key',
      flags: [
        '--virtual-nodes',
        'true',
        '--virtual-node-address',
        '10.1.2.3',
        // A range of one port: the node's.
        '--virtual-node-ports',
        '10443',
      ],
    });
  });
  after(async () => {
    await operator?.stop();
  });

  test('off by default: a ProviderConfig without virtualNode has no node', async () => {
    await stack.cluster().create(resources.providerConfig, '', providerConfig(undefined));
    // The account is proven (Ready) by the controller that runs beside the node's, on the same events.
    await stack
      .cluster()
      .waitFor(
        resources.providerConfig,
        '',
        CONFIG,
        (pc) => pc?.status?.conditions?.[0]?.status === 'True',
        'Ready',
      );
    const list = await admin.request(z.object({ items: z.array(z.unknown()) }), {
      method: 'GET',
      path: collectionPath(nodes),
      query: { labelSelector: 'gpucloud.io/virtual-node=true' },
    });
    assert.equal(list.items.length, 0);
  });

  test('turned on, the node registers Ready, tainted, labelled and sized from the guardrails and offers', async () => {
    await stack
      .cluster()
      .patch(resources.providerConfig, '', CONFIG, { spec: { virtualNode: { enabled: true, maxPods: 20 } } });
    const node = await poll(readNode, ready, `node ${NODE} Ready`);
    assert.ok(node);
    assert.deepEqual(
      node.spec.taints?.filter((t) => t.key.startsWith('gpucloud.io')),
      [{ key: 'gpucloud.io/virtual-node', value: 'true', effect: 'NoSchedule' }],
    );
    const labels = node.metadata.labels;
    assert.equal(labels.type, 'virtual-kubelet');
    assert.equal(labels['gpucloud.io/provider-config'], CONFIG);
    assert.equal(labels['gpucloud.io/gpu-type.NVIDIA-L40S'], 'true');
    assert.equal(labels['gpucloud.io/gpu-type.NVIDIA-GeForce-RTX-4090'], 'true');
    assert.equal(
      labels['gpucloud.io/gpu-type.NVIDIA-A100-SXM4-80GB'],
      undefined,
      'a type the guardrails refuse',
    );
    assert.equal(labels['gpucloud.io/region.us-east-1'], 'true');
    assert.equal(node.status?.capacity?.['nvidia.com/gpu'], '12');
    assert.equal(node.status?.allocatable?.['nvidia.com/gpu'], '12');
    assert.equal(node.status?.capacity?.pods, '20');
    assert.deepEqual(node.status?.addresses?.find((a) => a.type === 'InternalIP')?.address, '10.1.2.3');
    assert.equal(node.status?.daemonEndpoints?.kubeletEndpoint.Port, 10443);
    assert.equal(node.metadata.annotations?.['gpucloud.io/kubelet-port'], '10443', 'its port, kept on it');
    assert.deepEqual(
      node.metadata.ownerReferences?.map((o) => `${o.kind}/${o.name}`),
      [`ProviderConfig/${CONFIG}`],
    );
  });

  test("its Lease in kube-node-lease is the node's, and renewed on a kubelet's cadence", async () => {
    const node = await readNode();
    const path = objectPath(leases, { namespace: 'kube-node-lease', name: NODE });
    const first = await poll(
      () => admin.request(leaseSchema, { method: 'GET', path }).catch(() => undefined),
      (lease) => lease !== undefined,
      'the node Lease',
    );
    assert.equal(first?.spec.holderIdentity, NODE);
    assert.equal(first?.spec.leaseDurationSeconds, LEASE_DURATION_SECONDS);
    assert.equal(first?.metadata.ownerReferences[0]?.uid, node?.metadata.uid);
    const renewed = await poll(
      () => admin.request(leaseSchema, { method: 'GET', path }),
      (lease) => lease.spec.renewTime !== first?.spec.renewTime,
      'the Lease renewed',
      LEASE_DURATION_SECONDS * 1000,
    );
    const gap = Date.parse(renewed.spec.renewTime) - Date.parse(first?.spec.renewTime ?? '');
    assert.ok(gap >= 9_000 && gap < 20_000, `renewed ${gap} ms after the first`);
  });

  describe('a tenant of another namespace', () => {
    let tenant: KubeClient;
    before(async () => {
      await grantTenant(admin, OTHER_NS, TENANT, [
        'get',
        'list',
        'watch',
        'create',
        'patch',
        'update',
        'delete',
      ]);
      // What any workload author holds: Pods of their own namespace, nothing of the cluster.
      await grantPods(admin, OTHER_NS, TENANT);
      tenant = clientAs(stack.plane(), TENANT);
    });

    test('cannot turn on a virtual node, nor make one: ProviderConfigs and Nodes are the cluster’s', async () => {
      const forbidden = (error: unknown) => isStatus(error, 403);
      await assert.rejects(
        tenant.request(z.unknown(), {
          method: 'PATCH',
          path: objectPath(resources.providerConfig, { namespace: '', name: CONFIG }),
          body: { spec: { namespaces: { names: [ALLOWED_NS, OTHER_NS] } } },
        }),
        forbidden,
      );
      await assert.rejects(
        tenant.request(z.unknown(), {
          method: 'POST',
          path: collectionPath(resources.providerConfig),
          body: { ...providerConfig({ enabled: true }), metadata: { name: 'bobs-account' } },
        }),
        forbidden,
      );
      await assert.rejects(
        tenant.request(z.unknown(), {
          method: 'POST',
          path: collectionPath(nodes),
          body: {
            apiVersion: 'v1',
            kind: 'Node',
            metadata: { name: 'gpucloud-bob', labels: { 'gpucloud.io/virtual-node': 'true' } },
          },
        }),
        forbidden,
      );
      await assert.rejects(
        tenant.request(z.unknown(), {
          method: 'PATCH',
          path: objectPath(nodes, { namespace: '', name: NODE }),
          body: { spec: { taints: [] } },
        }),
        forbidden,
      );
    });

    test('a Pod bound to the node past the scheduler fails NamespaceNotAllowed, with no cloud call', async () => {
      // Allowed first: the Pod controller takes keys in order on one worker, so once the refusal below is
      // written, this one has been judged too, and was not refused (it runs as a cloud pod of its own).
      await admin.request(z.unknown(), {
        method: 'POST',
        path: collectionPath(pods, ALLOWED_NS),
        body: podOn('allowed'),
      });
      await tenant.request(z.unknown(), {
        method: 'POST',
        path: collectionPath(pods, OTHER_NS),
        body: podOn('sneaky'),
      });
      const refused = await poll(
        () =>
          admin.request(podSchema, {
            method: 'GET',
            path: objectPath(pods, { namespace: OTHER_NS, name: 'sneaky' }),
          }),
        (pod) => pod.status.phase === 'Failed',
        'the Pod refused',
      );
      assert.equal(refused.status.reason, 'NamespaceNotAllowed');
      assert.match(refused.status.message ?? '', /namespace team-b may not run Pods on node gpucloud-team-a/);
      const allowed = await admin.request(podSchema, {
        method: 'GET',
        path: objectPath(pods, { namespace: ALLOWED_NS, name: 'allowed' }),
      });
      assert.notEqual(allowed.status.phase, 'Failed');
      const cloudNames = stack
        .sim()
        .state.snapshot()
        .pods.map((pod) => pod.name);
      assert.ok(!cloudNames.includes('sneaky'), `no cloud pod for the refused Pod: ${cloudNames}`);
      const gpuPodsThere = await admin.request(z.object({ items: z.array(z.unknown()) }), {
        method: 'GET',
        path: collectionPath(resources.gpuPod, OTHER_NS),
      });
      assert.deepEqual(gpuPodsThere.items, [], 'nor a GpuPod that could make one');
      // Nor can the tenant write the Pod's status back: that is the node's.
      await assert.rejects(
        tenant.request(z.unknown(), {
          method: 'PATCH',
          path: `${objectPath(pods, { namespace: OTHER_NS, name: 'sneaky' })}/status`,
          body: { status: { phase: 'Running' } },
        }),
        (error: unknown) => isStatus(error, 403),
      );
      await poll(
        () => stack.cluster().occurrences(OTHER_NS, 'sneaky', 'NamespaceNotAllowed'),
        (count) => count === 1,
        'one NamespaceNotAllowed event on the Pod',
      );
    });
  });

  test('a Pod not started yet is refused once its namespace is no longer listed', async () => {
    await stack.cluster().patch(resources.providerConfig, '', CONFIG, {
      spec: { namespaces: { names: ['someone-else'] } },
    });
    const refused = await poll(
      () =>
        admin.request(podSchema, {
          method: 'GET',
          path: objectPath(pods, { namespace: ALLOWED_NS, name: 'allowed' }),
        }),
      (pod) => pod.status.phase === 'Failed',
      'the Pod refused',
    );
    assert.equal(refused.status.reason, 'NamespaceNotAllowed');
    await stack.cluster().patch(resources.providerConfig, '', CONFIG, {
      spec: { namespaces: { names: [ALLOWED_NS] } },
    });
  });

  test('a second node finding the one port of --virtual-node-ports held registers NotReady, naming the range', async () => {
    const second = { ...providerConfig({ enabled: true }), metadata: { name: 'team-a-second' } };
    await stack.cluster().create(resources.providerConfig, '', second);
    const read = () =>
      admin
        .request(nodeSchema, {
          method: 'GET',
          path: objectPath(nodes, { namespace: '', name: 'gpucloud-team-a-second' }),
        })
        .catch(() => undefined);
    const notReady = await poll(
      read,
      (node) => node?.status?.conditions?.some((c) => c.type === 'Ready') ?? false,
      'the second node with a Ready condition',
    );
    const condition = notReady?.status?.conditions?.find((c) => c.type === 'Ready');
    assert.equal(condition?.status, 'False');
    assert.equal(condition?.reason, 'NoKubeletPort');
    assert.match(
      String(condition?.message),
      /--virtual-node-ports 10443-10443 is another virtual node's: widen the range/,
    );
    assert.equal(notReady?.metadata.annotations?.['gpucloud.io/kubelet-port'], undefined);
    assert.equal(
      (await readNode())?.metadata.annotations?.['gpucloud.io/kubelet-port'],
      '10443',
      'the first keeps it',
    );
    await stack.cluster().delete(resources.providerConfig, '', 'team-a-second');
    await until(async () => (await read()) === undefined, 'the second node deleted');
  });

  test('turned off, the node is drained of its Pods and deregistered; turned on again, it comes back', async () => {
    await stack
      .cluster()
      .patch(resources.providerConfig, '', CONFIG, { spec: { virtualNode: { enabled: false } } });
    await until(async () => (await readNode()) === undefined, 'the node deleted');
    // Its two refused Pods went first, as a drain deletes every Pod of the node.
    for (const [namespace, name] of [
      [ALLOWED_NS, 'allowed'],
      [OTHER_NS, 'sneaky'],
    ] as const) {
      await assert.rejects(
        admin.request(z.unknown(), { method: 'GET', path: objectPath(pods, { namespace, name }) }),
        (error: unknown) => isStatus(error, 404),
        `${namespace}/${name} deleted`,
      );
    }
    await stack.cluster().patch(resources.providerConfig, '', CONFIG, {
      spec: { virtualNode: { enabled: true, maxPods: null } },
    });
    const back = await poll(readNode, ready, 'the node Ready again');
    assert.equal(back?.status?.capacity?.pods, '110', 'maxPods unset: a kubelet’s default');
  });

  test('its ProviderConfig deleted, the node goes with it', async () => {
    await stack.cluster().delete(resources.providerConfig, '', CONFIG);
    await until(async () => (await readNode()) === undefined, 'the node deleted');
  });
});
