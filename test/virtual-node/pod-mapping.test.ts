import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  configMapsNamed,
  type Mapping,
  type MappingContext,
  mapPod,
} from '../../src/virtual-node/pod-mapping.ts';
import type { Container, NodePodObject } from '../../src/virtual-node/pod-object.ts';
import { quantityValue } from '../../src/virtual-node/quantity.ts';

const L40S = 'NVIDIA L40S';
const RTX = 'NVIDIA GeForce RTX 4090';

const context: MappingContext = {
  config: 'team-a',
  node: { name: 'gpucloud-team-a', address: '10.1.2.3' },
  gpuTypes: [RTX, L40S],
  configMaps: new Map([
    ['settings', { MODEL: 'llama', EMPTY: '' }],
    ['absent', undefined],
  ]),
};

function pod(
  container: Partial<Container> = {},
  spec: Partial<NodePodObject['spec']> = {},
  metadata = {},
): NodePodObject {
  return {
    metadata: {
      name: 'web-1',
      namespace: 'team-a',
      uid: 'uid-1',
      labels: { app: 'web' },
      annotations: { team: 'a' },
      ...metadata,
    },
    spec: {
      nodeName: 'gpucloud-team-a',
      serviceAccountName: 'default',
      containers: [
        {
          name: 'main',
          image: 'vllm/vllm-openai:v1',
          resources: { limits: { 'nvidia.com/gpu': '1' } },
          ...container,
        },
      ],
      ...spec,
    },
  };
}

function mapped(mapping: Mapping) {
  assert.equal(mapping.kind, 'mapped', JSON.stringify(mapping));
  if (mapping.kind !== 'mapped') throw new Error('unreachable');
  return mapping.spec;
}

function refusedWith(mapping: Mapping): string {
  assert.equal(mapping.kind, 'refused', JSON.stringify(mapping));
  if (mapping.kind !== 'refused') throw new Error('unreachable');
  assert.equal(mapping.refusal.phase, 'Failed');
  assert.equal(mapping.refusal.reason, 'UnsupportedPodSpec');
  return mapping.refusal.message;
}

describe('a Pod as the spec of its GpuPod', () => {
  test('the least Pod: image, one GPU, placed over every type the node can place, in the node’s account', () => {
    assert.deepEqual(mapped(mapPod(pod(), context)), {
      name: 'web-1',
      image: 'vllm/vllm-openai:v1',
      gpuCount: 1,
      placement: { gpuTypes: [RTX, L40S] },
      paused: false,
      deletionPolicy: 'Delete',
      providerConfigRef: { name: 'team-a' },
    });
  });

  test('command and args make one shell-quoted command line', () => {
    const spec = mapped(
      mapPod(
        pod({ command: ['python', '-m', 'serve'], args: ['--name', "it's mine", '--port=8000', ''] }),
        context,
      ),
    );
    assert.equal(spec.initializationCommand, `python -m serve --name 'it'\\''s mine' --port=8000 ''`);
  });

  test('args without a command are refused: the cloud runs a command line, not the entrypoint’s arguments', () => {
    assert.match(
      refusedWith(mapPod(pod({ args: ['--port', '8000'] }), context)),
      /args and no command: .*set command too/,
    );
  });

  test('env: values as they are, Secret keys kept as references, ConfigMap keys and the downward API resolved', () => {
    const env = mapped(
      mapPod(
        pod({
          env: [
            { name: 'PLAIN', value: 'x' },
            { name: 'NOVALUE' },
            { name: 'TOKEN', valueFrom: { secretKeyRef: { name: 'hf', key: 'token' } } },
            { name: 'MODEL', valueFrom: { configMapKeyRef: { name: 'settings', key: 'MODEL' } } },
            { name: 'MAYBE', valueFrom: { configMapKeyRef: { name: 'absent', key: 'k', optional: true } } },
            { name: 'POD', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
            { name: 'NS', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
            { name: 'UID', valueFrom: { fieldRef: { fieldPath: 'metadata.uid' } } },
            { name: 'APP', valueFrom: { fieldRef: { fieldPath: "metadata.labels['app']" } } },
            { name: 'NOLABEL', valueFrom: { fieldRef: { fieldPath: "metadata.labels['none']" } } },
            { name: 'TEAM', valueFrom: { fieldRef: { fieldPath: "metadata.annotations['team']" } } },
            { name: 'NODE', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } },
            { name: 'SA', valueFrom: { fieldRef: { fieldPath: 'spec.serviceAccountName' } } },
            { name: 'HOST', valueFrom: { fieldRef: { fieldPath: 'status.hostIP' } } },
            { name: 'PLAIN', value: 'last wins' },
          ],
        }),
        context,
      ),
    ).environmentVars;
    assert.deepEqual(env, [
      { key: 'PLAIN', value: 'last wins' },
      { key: 'NOVALUE', value: '' },
      { key: 'TOKEN', valueFrom: { secretKeyRef: { name: 'hf', key: 'token' } } },
      { key: 'MODEL', value: 'llama' },
      { key: 'POD', value: 'web-1' },
      { key: 'NS', value: 'team-a' },
      { key: 'UID', value: 'uid-1' },
      { key: 'APP', value: 'web' },
      { key: 'NOLABEL', value: '' },
      { key: 'TEAM', value: 'a' },
      { key: 'NODE', value: 'gpucloud-team-a' },
      { key: 'SA', value: 'default' },
      { key: 'HOST', value: '10.1.2.3' },
    ]);
  });

  test('resourceFieldRef: the quantity over the divisor, rounded up, as a kubelet gives it', () => {
    const env = mapped(
      mapPod(
        pod({
          resources: {
            limits: { 'nvidia.com/gpu': '1', cpu: '1500m', memory: '3Gi' },
            requests: { cpu: '250m' },
          },
          env: [
            { name: 'CPUS', valueFrom: { resourceFieldRef: { resource: 'limits.cpu' } } },
            {
              name: 'MEM_MI',
              valueFrom: { resourceFieldRef: { resource: 'limits.memory', divisor: '1Mi' } },
            },
            {
              name: 'REQ_M',
              valueFrom: {
                resourceFieldRef: { containerName: 'main', resource: 'requests.cpu', divisor: '1m' },
              },
            },
            { name: 'DISK', valueFrom: { resourceFieldRef: { resource: 'requests.ephemeral-storage' } } },
          ],
        }),
        context,
      ),
    ).environmentVars;
    assert.deepEqual(env, [
      { key: 'CPUS', value: '2' },
      { key: 'MEM_MI', value: '3072' },
      { key: 'REQ_M', value: '250' },
      { key: 'DISK', value: '0' },
    ]);
  });

  test('a ConfigMap missing, or its key, makes the container wait as a kubelet’s does, not fail', () => {
    assert.deepEqual(
      mapPod(
        pod({ env: [{ name: 'X', valueFrom: { configMapKeyRef: { name: 'absent', key: 'k' } } }] }),
        context,
      ),
      { kind: 'waiting', reason: 'CreateContainerConfigError', message: 'configmap "absent" not found' },
    );
    assert.deepEqual(
      mapPod(
        pod({ env: [{ name: 'X', valueFrom: { configMapKeyRef: { name: 'settings', key: 'nope' } } }] }),
        context,
      ),
      {
        kind: 'waiting',
        reason: 'CreateContainerConfigError',
        message: "couldn't find key nope in ConfigMap team-a/settings",
      },
    );
    assert.deepEqual(
      configMapsNamed(
        pod({
          env: [
            { name: 'X', valueFrom: { configMapKeyRef: { name: 'b', key: 'k' } } },
            { name: 'Y', valueFrom: { configMapKeyRef: { name: 'a', key: 'k' } } },
          ],
        }),
      ),
      ['a', 'b'],
    );
  });

  test('ports become exposed ports; the ephemeral-storage limit the container volume in GB, rounded up', () => {
    const spec = mapped(
      mapPod(
        pod({
          ports: [{ containerPort: 8000 }, { containerPort: 8080, protocol: 'TCP' }, { containerPort: 8000 }],
          resources: { limits: { 'nvidia.com/gpu': '4', 'ephemeral-storage': '50Gi' } },
        }),
        context,
      ),
    );
    assert.deepEqual(spec.expose, [{ port: 8000 }, { port: 8080 }]);
    assert.equal(spec.containerVolumeInGb, 54, '50 GiB is 53.7 GB');
    assert.equal(spec.gpuCount, 4);
  });

  test('the GPU type: the annotation’s list in its order, else the node selector’s types, mapped back from their label form', () => {
    assert.deepEqual(
      mapped(mapPod(pod({}, {}, { annotations: { 'gpucloud.io/gpu-types': `${L40S}, ${RTX}` } }), context))
        .placement,
      { gpuTypes: [L40S, RTX], order: 'Listed' },
    );
    assert.deepEqual(
      mapped(
        mapPod(
          pod(
            {},
            {
              nodeSelector: {
                'gpucloud.io/gpu-type.NVIDIA-L40S': 'true',
                'gpucloud.io/virtual-node': 'true',
              },
            },
          ),
          context,
        ),
      ).placement,
      { gpuTypes: [L40S] },
    );
    assert.match(
      refusedWith(mapPod(pod({}, {}, { annotations: { 'gpucloud.io/gpu-types': 'NVIDIA H100' } }), context)),
      /names "NVIDIA H100", which the node cannot place \(it places "NVIDIA GeForce RTX 4090", "NVIDIA L40S"\)/,
    );
    assert.match(
      refusedWith(mapPod(pod({}, { nodeSelector: { 'gpucloud.io/gpu-type.NVIDIA-H100': 'true' } }), context)),
      /node selector "gpucloud.io\/gpu-type.NVIDIA-H100": which the node cannot place/,
    );
  });

  test('more types than a placement lists: any model the guardrails allow; none at all: the container waits', () => {
    const many = Array.from({ length: 17 }, (_, i) => `GPU ${i}`);
    const spec = mapped(mapPod(pod(), { ...context, gpuTypes: many }));
    assert.deepEqual(spec.placement, {});
    assert.equal(spec.minSingleCardVramInGb, 1);
    const none = mapPod(pod(), { ...context, gpuTypes: [] });
    assert.equal(none.kind, 'waiting');
    assert.equal(none.kind === 'waiting' && none.reason, 'NoGpuTypes');
  });

  test('no ConfigMaps read: their variables are left out, the rest mapped (for a comparison)', () => {
    const { configMaps: _, ...unread } = context;
    const spec = mapped(
      mapPod(
        pod({
          env: [
            { name: 'X', valueFrom: { configMapKeyRef: { name: 'absent', key: 'k' } } },
            { name: 'Y', value: 'y' },
          ],
        }),
        unread,
      ),
    );
    assert.deepEqual(spec.environmentVars, [{ key: 'Y', value: 'y' }]);
  });
});

describe('what a gpucloud node refuses, before any cloud call', () => {
  const cases: Array<[string, NodePodObject, RegExp]> = [
    [
      'several containers',
      {
        ...pod(),
        spec: { ...pod().spec, containers: [...pod().spec.containers, { name: 'sidecar', image: 'x' }] },
      },
      /one container per Pod; this Pod has 2 \(main, sidecar\)/,
    ],
    ['init containers', pod({}, { initContainers: [{ name: 'init' }] }), /init containers are not supported/],
    [
      'a hostPath volume',
      pod({}, { volumes: [{ name: 'data', hostPath: { path: '/data' } }] }),
      /volume "data" \(hostPath\) is not supported/,
    ],
    [
      'a PersistentVolumeClaim',
      pod({}, { volumes: [{ name: 'pvc', persistentVolumeClaim: { claimName: 'c' } }] }),
      /volume "pvc" \(persistentVolumeClaim\)/,
    ],
    ['privileged', pod({ securityContext: { privileged: true } }), /container "main" is privileged/],
    ['hostNetwork', pod({}, { hostNetwork: true }), /hostNetwork is not supported/],
    ['hostPID', pod({}, { hostPID: true }), /hostPID is not supported/],
    [
      'no GPU limit',
      pod({ resources: { limits: { cpu: '1' } } }),
      /asks for no GPU: set resources.limits\["nvidia.com\/gpu"\]/,
    ],
    [
      'a GPU count the cloud cannot take',
      pod({ resources: { limits: { 'nvidia.com/gpu': '3' } } }),
      /must be a power of 2 \(1, 2, 4, 8, ...\), not 3/,
    ],
    ['envFrom', pod({ envFrom: [{ configMapRef: { name: 'settings' } }] }), /envFrom is not supported yet/],
    [
      'imagePullSecrets',
      pod({}, { imagePullSecrets: [{ name: 'regcred' }] }),
      /imagePullSecrets are not supported yet/,
    ],
    [
      'a reserved variable',
      pod({ env: [{ name: 'GPUCLOUD_OWNER_UID', value: 'x' }] }),
      /env GPUCLOUD_OWNER_UID is reserved/,
    ],
    ['POD_ID', pod({ env: [{ name: 'POD_ID', value: 'x' }] }), /env POD_ID is reserved/],
    [
      'a downward field the node cannot give',
      pod({ env: [{ name: 'IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } }] }),
      /env IP: fieldRef status.podIP is not supported/,
    ],
    [
      'a limit resourceFieldRef reads and the Pod does not set',
      pod({ env: [{ name: 'C', valueFrom: { resourceFieldRef: { resource: 'limits.cpu' } } }] }),
      /needs resources.limits.cpu set/,
    ],
    ['a UDP port', pod({ ports: [{ containerPort: 53, protocol: 'UDP' }] }), /ports 53: only TCP ports/],
    ['a command line over the cloud’s limit', pod({ command: ['x'.repeat(8193)] }), /over the cloud's 8192/],
  ];
  for (const [what, refused, message] of cases) {
    test(what, () => assert.match(refusedWith(mapPod(refused, context)), message));
  }

  test('the service account token volume and emptyDir are no reason to refuse', () => {
    const tokenVolume = {
      name: 'kube-api-access-x',
      projected: {
        sources: [
          { serviceAccountToken: { path: 'token' } },
          { configMap: { name: 'kube-root-ca.crt' } },
          { downwardAPI: { items: [] } },
        ],
      },
    };
    mapped(mapPod(pod({}, { volumes: [tokenVolume, { name: 'scratch', emptyDir: {} }] }), context));
  });

  test('every problem is named in the one message', () => {
    const message = refusedWith(
      mapPod(
        pod({ securityContext: { privileged: true } }, { hostNetwork: true, initContainers: [{}] }),
        context,
      ),
    );
    assert.match(
      message,
      /^Pod was rejected: init containers are not supported; hostNetwork is not supported.*; container "main" is privileged/,
    );
  });
});

describe('quantities', () => {
  test('decimal and binary suffixes, milli, exponents; anything else is none', () => {
    assert.equal(quantityValue('1'), 1);
    assert.equal(quantityValue('500m'), 0.5);
    assert.equal(quantityValue('2Ki'), 2048);
    assert.equal(quantityValue('10G'), 1e10);
    assert.equal(quantityValue('1.5Gi'), 1.5 * 2 ** 30);
    assert.equal(quantityValue('1e3'), 1000);
    assert.equal(quantityValue(4), 4);
    assert.equal(quantityValue('ten'), undefined);
    assert.equal(quantityValue('1Zi'), undefined);
  });
});
