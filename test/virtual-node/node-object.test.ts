import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { NodeCapacity } from '../../src/virtual-node/capacity.ts';
import {
  cordonPatch,
  heartbeatOf,
  type NodeFacts,
  newNode,
  nodeLabels,
  nodePatch,
  nodeStatus,
  type StoredNode,
  statusDiffers,
  TAINT,
} from '../../src/virtual-node/node-object.ts';

const CAPACITY: NodeCapacity = {
  resources: {
    'nvidia.com/gpu': '16',
    cpu: '128',
    memory: '16000G',
    'ephemeral-storage': '800G',
    pods: '110',
  },
  gpuTypes: ['NVIDIA GeForce RTX 4090', 'NVIDIA L40S'],
  regions: ['eu-1'],
};

function facts(overrides: Partial<NodeFacts> = {}): NodeFacts {
  return {
    name: 'gpucloud-team-a',
    config: { name: 'team-a', uid: 'uid-1' },
    capacity: CAPACITY,
    ready: { ok: true, reason: 'KubeletReady', message: 'ready' },
    address: '10.0.0.7',
    port: 10250,
    version: 'v0.0.0-test',
    ...overrides,
  };
}

/** The node as the apiserver would hand it back after `newNode` and `nodeStatus`: quantities canonical. */
function stored(at: Date, overrides: Partial<NodeFacts> = {}): StoredNode {
  const created = newNode(facts(overrides)) as { metadata: StoredNode['metadata']; spec: StoredNode['spec'] };
  const status = nodeStatus(facts(overrides), undefined, at) as StoredNode['status'];
  return {
    metadata: { ...created.metadata, resourceVersion: '7' },
    spec: created.spec,
    status: { ...status, capacity: { ...status?.capacity, memory: '16T' } },
  };
}

describe('the virtual Node object', () => {
  test('labels: virtual-kubelet, the account, each GPU type and region it places, linux/amd64', () => {
    assert.deepEqual(nodeLabels(facts()), {
      type: 'virtual-kubelet',
      'kubernetes.io/role': 'agent',
      'kubernetes.io/hostname': 'gpucloud-team-a',
      'kubernetes.io/os': 'linux',
      'kubernetes.io/arch': 'amd64',
      'node.kubernetes.io/exclude-from-external-load-balancers': 'true',
      'gpucloud.io/virtual-node': 'true',
      'gpucloud.io/provider-config': 'team-a',
      'gpucloud.io/gpu-type.NVIDIA-GeForce-RTX-4090': 'true',
      'gpucloud.io/gpu-type.NVIDIA-L40S': 'true',
      'gpucloud.io/region.eu-1': 'true',
    });
  });

  test('a ProviderConfig name too long for a label value is only in the annotation', () => {
    const long = 'a'.repeat(70);
    const node = newNode(facts({ config: { name: long, uid: 'u' } })) as {
      metadata: { labels: Record<string, string>; annotations: Record<string, string> };
    };
    assert.equal(node.metadata.labels['gpucloud.io/provider-config'], undefined);
    assert.equal(node.metadata.annotations['gpucloud.io/provider-config'], long);
  });

  test('registered tainted NoSchedule and owned by its ProviderConfig', () => {
    const node = newNode(facts()) as {
      metadata: { ownerReferences: unknown[] };
      spec: { taints: unknown[] };
    };
    assert.deepEqual(node.spec.taints, [
      { key: 'gpucloud.io/virtual-node', value: 'true', effect: 'NoSchedule' },
    ]);
    assert.deepEqual(node.metadata.ownerReferences, [
      { apiVersion: 'gpucloud.io/v1alpha1', kind: 'ProviderConfig', name: 'team-a', uid: 'uid-1' },
    ]);
  });

  test('a node as wanted needs no patch; a type no longer offered loses its label, others keep theirs', () => {
    const node = stored(new Date());
    node.metadata.labels = { ...node.metadata.labels, 'team.example/rack': 'r1' };
    assert.equal(nodePatch(node, facts()), undefined);
    const fewer = { ...CAPACITY, gpuTypes: ['NVIDIA L40S'] };
    assert.deepEqual(nodePatch(node, facts({ capacity: fewer })), {
      metadata: { resourceVersion: '7', labels: { 'gpucloud.io/gpu-type.NVIDIA-GeForce-RTX-4090': null } },
    });
  });

  test('its kubelet API port is recorded on it, and moved when the port changes', () => {
    const node = stored(new Date());
    assert.equal(node.metadata.annotations?.['gpucloud.io/kubelet-port'], '10250');
    assert.deepEqual(nodePatch(node, facts({ port: 10253 })), {
      metadata: { resourceVersion: '7', labels: {}, annotations: { 'gpucloud.io/kubelet-port': '10253' } },
    });
    // No port (every one held): none recorded, and a recorded one is left for the next pick to read.
    const unported = newNode(facts({ port: 0 })) as { metadata: { annotations: Record<string, string> } };
    assert.deepEqual(Object.keys(unported.metadata.annotations), ['gpucloud.io/provider-config']);
    assert.equal(nodePatch(node, facts({ port: 0 })), undefined);
  });

  test('a lost taint is put back beside the taints others set', () => {
    const node = stored(new Date());
    const notReady = { key: 'node.kubernetes.io/not-ready', effect: 'NoSchedule' };
    node.spec = { taints: [notReady] };
    assert.deepEqual(nodePatch(node, facts()), {
      metadata: { resourceVersion: '7', labels: {} },
      spec: { taints: [notReady, TAINT] },
    });
  });

  test('cordoned for its drain, marked as the operator’s; uncordoned when turned on again, a cordon by hand kept', () => {
    const node = stored(new Date());
    const cordon = cordonPatch(node);
    assert.deepEqual(cordon, {
      metadata: { resourceVersion: '7', annotations: { 'gpucloud.io/draining': 'true' } },
      spec: { unschedulable: true },
    });
    const draining: StoredNode = {
      ...node,
      metadata: {
        ...node.metadata,
        annotations: { ...node.metadata.annotations, 'gpucloud.io/draining': 'true' },
      },
      spec: { ...node.spec, unschedulable: true },
    };
    assert.equal(cordonPatch(draining), undefined, 'already cordoned for its drain');
    assert.deepEqual(nodePatch(draining, facts()), {
      metadata: { resourceVersion: '7', labels: {}, annotations: { 'gpucloud.io/draining': null } },
      spec: { unschedulable: false },
    });
    const byHand: StoredNode = { ...node, spec: { ...node.spec, unschedulable: true } };
    assert.equal(nodePatch(byHand, facts()), undefined, 'a cordon the operator did not make is not lifted');
  });

  test('status: five conditions, the address and kubelet port, capacity as allocatable', () => {
    const status = nodeStatus(facts(), undefined, new Date('2026-03-01T10:00:00.123Z')) as {
      conditions: Array<{ type: string; status: string; lastHeartbeatTime: string }>;
      addresses: unknown;
      daemonEndpoints: unknown;
      allocatable: unknown;
    };
    assert.deepEqual(
      status.conditions.map((c) => `${c.type}=${c.status}`),
      [
        'Ready=True',
        'MemoryPressure=False',
        'DiskPressure=False',
        'PIDPressure=False',
        'NetworkUnavailable=False',
      ],
    );
    assert.equal(status.conditions[0]?.lastHeartbeatTime, '2026-03-01T10:00:00Z');
    assert.deepEqual(status.addresses, [
      { type: 'InternalIP', address: '10.0.0.7' },
      { type: 'Hostname', address: 'gpucloud-team-a' },
    ]);
    assert.deepEqual(status.daemonEndpoints, { kubeletEndpoint: { Port: 10250 } });
    assert.deepEqual(status.allocatable, CAPACITY.resources);
  });

  test('a condition keeps its transition time while its status stays, and takes a new one when it changes', () => {
    const first = stored(new Date('2026-03-01T10:00:00Z'));
    const later = new Date('2026-03-01T10:05:00Z');
    const same = nodeStatus(facts(), first, later) as { conditions: Array<{ lastTransitionTime: string }> };
    assert.equal(same.conditions[0]?.lastTransitionTime, '2026-03-01T10:00:00Z');
    const down = nodeStatus(
      facts({ ready: { ok: false, reason: 'AccountNotReady', message: 'm' } }),
      first,
      later,
    ) as {
      conditions: Array<{ status: string; lastTransitionTime: string }>;
    };
    assert.equal(down.conditions[0]?.status, 'False');
    assert.equal(down.conditions[0]?.lastTransitionTime, '2026-03-01T10:05:00Z');
    assert.equal(down.conditions[1]?.lastTransitionTime, '2026-03-01T10:00:00Z');
  });

  test('a stored status differs only in what matters: readiness, capacity, port; not canonical quantities', () => {
    const node = stored(new Date());
    assert.equal(statusDiffers(node, facts()), false);
    assert.equal(
      statusDiffers(node, facts({ ready: { ok: false, reason: 'AccountNotReady', message: 'm' } })),
      true,
    );
    const more = { ...CAPACITY, resources: { ...CAPACITY.resources, 'nvidia.com/gpu': '17' } };
    assert.equal(statusDiffers(node, facts({ capacity: more })), true);
    assert.equal(statusDiffers(node, facts({ port: 10251 })), true);
    assert.equal(statusDiffers({ metadata: node.metadata }, facts()), true);
  });

  test('the heartbeat is the oldest of the conditions, none without them', () => {
    assert.equal(heartbeatOf(stored(new Date('2026-03-01T10:00:00Z'))), Date.parse('2026-03-01T10:00:00Z'));
    assert.ok(Number.isNaN(heartbeatOf({ metadata: { name: 'n' } })));
  });
});
