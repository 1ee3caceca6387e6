import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { MappingContext } from '../../src/virtual-node/mapping-context.ts';
import { configMapsNamed, type Mapping, mapPod, secretsNamed } from '../../src/virtual-node/pod-mapping.ts';
import type { Container, NodePodObject } from '../../src/virtual-node/pod-object.ts';
import { covers, registryOf, type SecretFacts, secretFacts } from '../../src/virtual-node/pull-secrets.ts';
import { quantityValue } from '../../src/virtual-node/quantity.ts';

const L40S = 'NVIDIA L40S';
const RTX = 'NVIDIA GeForce RTX 4090';

const context: MappingContext = {
  config: 'team-a',
  node: { name: 'gpucloud-team-a', address: '10.1.2.3' },
  gpuTypes: [RTX, L40S],
  configMaps: new Map<string, Record<string, string> | undefined>([
    ['settings', { MODEL: 'llama', EMPTY: '' }],
    ['absent', undefined],
    ['reserved', { POD_ID: 'x' }],
  ]),
  secrets: new Map([['hf', secretFacts({ type: 'Opaque', data: { token: 'c2VjcmV0' } })]]),
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

const PASSWORD = 'pa55-word-never-written';

/** A dockerconfigjson Secret's data: a login for each of `registries`. */
function dockerConfig(...registries: string[]): Record<string, string> {
  const auths = Object.fromEntries(
    registries.map((registry) => [
      registry,
      { username: 'robot', password: PASSWORD, auth: 'cm9ib3Q6cGE1NQ==' },
    ]),
  );
  return { '.dockerconfigjson': Buffer.from(JSON.stringify({ auths })).toString('base64') };
}

const pullSecret = (annotations: Record<string, string>, ...registries: string[]): SecretFacts =>
  secretFacts({ type: 'kubernetes.io/dockerconfigjson', annotations, data: dockerConfig(...registries) });

const withSecrets: MappingContext = {
  ...context,
  configMaps: new Map([
    ...(context.configMaps ?? []),
    ['first', { A: 'from-first', SHARED: 'first', 'bad name': 'x', '1ST': 'x' }],
    ['second', { SHARED: 'second', B: 'b' }],
  ]),
  secrets: new Map<string, SecretFacts | undefined>([
    [
      'hf',
      secretFacts({ type: 'Opaque', data: { TOKEN: 'c2VjcmV0', 'api-key': 'c2VjcmV0', 'no good': 'eA==' } }),
    ],
    ['regcred', pullSecret({ 'gpucloud.io/registry-auth-id': '42' }, 'registry.example.com')],
    ['hubcred', pullSecret({ 'gpucloud.io/registry-auth-id': '7' }, 'https://index.docker.io/v1/')],
    ['unannotated', pullSecret({}, 'registry.example.com')],
    ['gone', undefined],
    ['other', secretFacts({ type: 'Opaque', data: { k: 'eA==' } })],
  ]),
};

function mappedWith(mapping: Mapping) {
  assert.equal(mapping.kind, 'mapped', JSON.stringify(mapping));
  if (mapping.kind !== 'mapped') throw new Error('unreachable');
  return mapping;
}

describe('envFrom, as a kubelet makes the environment', () => {
  test('ConfigMap keys resolved, Secret keys kept as references; envFrom in order, then env over it', () => {
    const { spec, warnings } = mappedWith(
      mapPod(
        pod({
          envFrom: [
            { configMapRef: { name: 'first' } },
            { configMapRef: { name: 'second' }, prefix: 'S_' },
            { configMapRef: { name: 'second' } },
            { secretRef: { name: 'hf' } },
          ],
          env: [{ name: 'A', value: 'env wins' }],
        }),
        withSecrets,
      ),
    );
    assert.deepEqual(spec.environmentVars, [
      { key: 'A', value: 'env wins' },
      { key: 'SHARED', value: 'second' },
      { key: 'S_B', value: 'b' },
      { key: 'S_SHARED', value: 'second' },
      { key: 'B', value: 'b' },
      { key: 'TOKEN', valueFrom: { secretKeyRef: { name: 'hf', key: 'TOKEN' } } },
      { key: 'api-key', valueFrom: { secretKeyRef: { name: 'hf', key: 'api-key' } } },
    ]);
    // Keys that are no variable name are skipped, and said in the Pod's events as a kubelet says them.
    assert.deepEqual(warnings, [
      {
        reason: 'InvalidEnvironmentVariableNames',
        message:
          'Keys [1ST, bad name] from the EnvFrom configMap team-a/first were skipped since they are considered invalid environment variable names.',
      },
      {
        reason: 'InvalidEnvironmentVariableNames',
        message:
          'Keys [no good] from the EnvFrom secret team-a/hf were skipped since they are considered invalid environment variable names.',
      },
    ]);
  });

  test('a prefix makes a key a valid name or not: it is checked with the prefix on', () => {
    const { spec, warnings } = mappedWith(
      mapPod(pod({ envFrom: [{ configMapRef: { name: 'first' }, prefix: 'P_' }] }), withSecrets),
    );
    assert.deepEqual(
      spec.environmentVars?.map((each) => each.key),
      ['P_1ST', 'P_A', 'P_SHARED'],
    );
    assert.match(warnings[0]?.message ?? '', /^Keys \[P_bad name\] from the EnvFrom configMap team-a\/first/);
  });

  test('a missing source makes the container wait, as env references do; an optional one is skipped', () => {
    assert.deepEqual(mapPod(pod({ envFrom: [{ configMapRef: { name: 'absent' } }] }), withSecrets), {
      kind: 'waiting',
      reason: 'CreateContainerConfigError',
      message: 'configmap "absent" not found',
    });
    assert.deepEqual(mapPod(pod({ envFrom: [{ secretRef: { name: 'gone' } }] }), withSecrets), {
      kind: 'waiting',
      reason: 'CreateContainerConfigError',
      message: 'secret "gone" not found in namespace team-a',
    });
    const optional = mapPod(
      pod({
        envFrom: [
          { configMapRef: { name: 'absent', optional: true } },
          { secretRef: { name: 'gone', optional: true } },
        ],
        env: [{ name: 'X', value: 'x' }],
      }),
      withSecrets,
    );
    assert.deepEqual(mappedWith(optional).spec.environmentVars, [{ key: 'X', value: 'x' }]);
  });

  test('an env Secret key: kept as a reference when there; optional and missing, left out; else the container waits', () => {
    const withEnv = (secretKeyRef: { name: string; key: string; optional?: boolean }) =>
      mapPod(pod({ env: [{ name: 'T', valueFrom: { secretKeyRef } }] }), withSecrets);
    assert.deepEqual(mappedWith(withEnv({ name: 'other', key: 'k' })).spec.environmentVars, [
      { key: 'T', valueFrom: { secretKeyRef: { name: 'other', key: 'k' } } },
    ]);
    assert.equal(
      mappedWith(withEnv({ name: 'gone', key: 'k', optional: true })).spec.environmentVars,
      undefined,
    );
    assert.equal(
      mappedWith(withEnv({ name: 'other', key: 'nope', optional: true })).spec.environmentVars,
      undefined,
    );
    assert.deepEqual(withEnv({ name: 'gone', key: 'k' }), {
      kind: 'waiting',
      reason: 'CreateContainerConfigError',
      message: 'secret "gone" not found',
    });
    assert.deepEqual(withEnv({ name: 'other', key: 'nope' }), {
      kind: 'waiting',
      reason: 'CreateContainerConfigError',
      message: "couldn't find key nope in Secret team-a/other",
    });
  });

  test('the sources read are the Pod’s own names, sorted, once each', () => {
    const named = pod(
      {
        envFrom: [
          { secretRef: { name: 'b' } },
          { configMapRef: { name: 'cm' } },
          { secretRef: { name: 'a' } },
        ],
        env: [{ name: 'T', valueFrom: { secretKeyRef: { name: 'env-only', key: 'k' } } }],
      },
      { imagePullSecrets: [{ name: 'pull' }, { name: 'a' }, {}] },
    );
    assert.deepEqual(secretsNamed(named), ['a', 'b', 'env-only', 'pull']);
    assert.deepEqual(configMapsNamed(named), ['cm']);
  });

  test('not read (a comparison): envFrom gives nothing and makes nothing wait', () => {
    const { configMaps: _c, secrets: _s, ...unread } = withSecrets;
    const spec = mapped(
      mapPod(
        pod({ envFrom: [{ configMapRef: { name: 'absent' } }, { secretRef: { name: 'gone' } }] }),
        unread,
      ),
    );
    assert.equal(spec.environmentVars, undefined);
  });
});

describe('$(VAR) references, as a kubelet expands them', () => {
  test('in env values: from envFrom and the variables before, $$ a literal $, an unknown name kept', () => {
    const spec = mapped(
      mapPod(
        pod({
          envFrom: [{ configMapRef: { name: 'second' } }],
          env: [
            { name: 'HOST', value: 'db' },
            { name: 'URL', value: 'http://$(HOST):$(PORT)/$(B)' },
            { name: 'PORT', value: '5432' },
            { name: 'ESCAPED', value: '$$(HOST) costs $$5' },
            { name: 'POD', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
            { name: 'SELF', value: 'pod-$(POD)-$(MODEL)' },
            { name: 'MODEL', valueFrom: { configMapKeyRef: { name: 'settings', key: 'MODEL' } } },
            { name: 'LATER', value: '$(MODEL)$(' },
          ],
        }),
        withSecrets,
      ),
    );
    assert.deepEqual(spec.environmentVars, [
      { key: 'B', value: 'b' },
      { key: 'SHARED', value: 'second' },
      { key: 'HOST', value: 'db' },
      { key: 'URL', value: 'http://db:$(PORT)/b' },
      { key: 'PORT', value: '5432' },
      { key: 'ESCAPED', value: '$(HOST) costs $5' },
      { key: 'POD', value: 'web-1' },
      { key: 'SELF', value: 'pod-web-1-$(MODEL)' },
      { key: 'MODEL', value: 'llama' },
      { key: 'LATER', value: 'llama$(' },
    ]);
  });

  test('in command and args: from the final environment, then shell-quoted', () => {
    const spec = mapped(
      mapPod(
        pod({
          command: ['serve', '--model=$(MODEL)'],
          args: ['$(GREETING)', '$$(MODEL)', '$(NOPE)'],
          env: [
            { name: 'MODEL', value: 'first' },
            { name: 'GREETING', value: "it's $(MODEL)" },
            { name: 'MODEL', value: 'final' },
          ],
        }),
        withSecrets,
      ),
    );
    assert.equal(spec.initializationCommand, `serve --model=final 'it'\\''s first' '$(MODEL)' '$(NOPE)'`);
  });

  test('a Secret’s variable as a whole env value stays a reference to its key, never its value', () => {
    const spec = mapped(
      mapPod(
        pod({
          envFrom: [{ secretRef: { name: 'hf' } }],
          env: [
            { name: 'HF_TOKEN', value: '$(TOKEN)' },
            { name: 'KEY', valueFrom: { secretKeyRef: { name: 'other', key: 'k' } } },
            { name: 'KEY_TOO', value: '$(KEY)' },
          ],
        }),
        withSecrets,
      ),
    );
    const byKey = new Map(spec.environmentVars?.map((each) => [each.key, each]));
    assert.deepEqual(byKey.get('HF_TOKEN'), {
      key: 'HF_TOKEN',
      valueFrom: { secretKeyRef: { name: 'hf', key: 'TOKEN' } },
    });
    assert.deepEqual(byKey.get('KEY_TOO'), {
      key: 'KEY_TOO',
      valueFrom: { secretKeyRef: { name: 'other', key: 'k' } },
    });
  });

  test('a Secret’s variable inside other text of an env value is refused: it would be written in clear', () => {
    const message = refusedWith(
      mapPod(
        pod({
          envFrom: [{ secretRef: { name: 'hf' } }],
          env: [{ name: 'AUTH', value: 'Bearer $(TOKEN)' }],
        }),
        withSecrets,
      ),
    );
    assert.match(message, /env AUTH: its value writes \$\(TOKEN\), a Secret's variable, into other text/);
  });

  test('a Secret’s variable in the command is left for the cloud pod’s shell to read from its environment', () => {
    const spec = mapped(
      mapPod(
        pod({
          command: ['login', '--token=$(TOKEN)', '$(TOKEN)', "a b$(TOKEN)'"],
          envFrom: [{ secretRef: { name: 'hf' } }],
        }),
        withSecrets,
      ),
    );
    assert.equal(spec.initializationCommand, `login --token="\${TOKEN}" "\${TOKEN}" 'a b'"\${TOKEN}"''\\'''`);
    assert.match(
      refusedWith(
        mapPod(
          pod({ command: ['login', '$(api-key)'], envFrom: [{ secretRef: { name: 'hf' } }] }),
          withSecrets,
        ),
      ),
      /the command uses \$\(api-key\): a Secret's variable is read there by the cloud pod's shell, which cannot name it/,
    );
  });
});

describe('imagePullSecrets as the cloud’s registry credential', () => {
  const pulling = (image: string, ...names: string[]) =>
    pod({ image }, { imagePullSecrets: names.map((name) => ({ name })) });

  test('the first Secret with a login for the image’s registry: its annotated credential id, a private image', () => {
    const spec = mapped(
      mapPod(pulling('registry.example.com/team/app:1', 'hubcred', 'regcred', 'unannotated'), withSecrets),
    );
    assert.equal(spec.containerRegistryAuthId, 42);
    assert.equal(spec.imagePublicType, 'PRIVATE');
    assert.equal(spec.image, 'registry.example.com/team/app:1');
    assert.equal(
      mapped(mapPod(pulling('team/app:1', 'regcred', 'hubcred'), withSecrets)).containerRegistryAuthId,
      7,
    );
  });

  test('no Secret with a login for the registry: pulled without one, as a kubelet does', () => {
    const spec = mapped(mapPod(pulling('quay.io/team/app:1', 'regcred', 'hf'), withSecrets));
    assert.equal(spec.containerRegistryAuthId, undefined);
    assert.equal(spec.imagePublicType, undefined);
  });

  test('a login with no credential id, or a listed Secret missing: the container waits, saying what to do', () => {
    const unannotated = mapPod(pulling('registry.example.com/app', 'unannotated'), withSecrets);
    assert.equal(unannotated.kind, 'waiting');
    assert.match(
      unannotated.kind === 'waiting' ? unannotated.message : '',
      /imagePullSecret "unannotated" has the login for registry.example.com.*annotate the Secret gpucloud.io\/registry-auth-id=/,
    );
    const notAnId = mapPod(pulling('registry.example.com/app', 'bad'), {
      ...withSecrets,
      secrets: new Map([
        ['bad', pullSecret({ 'gpucloud.io/registry-auth-id': 'abc' }, 'registry.example.com')],
      ]),
    });
    assert.match(notAnId.kind === 'waiting' ? notAnId.message : '', /\(it says "abc", not an id\)/);
    assert.deepEqual(mapPod(pulling('registry.example.com/app', 'gone'), withSecrets), {
      kind: 'waiting',
      reason: 'CreateContainerConfigError',
      message: 'imagePullSecrets: secret "gone" not found in namespace team-a',
    });
    // A Secret found first with the login wins over one missing, as a kubelet's pull with it would.
    assert.equal(
      mapped(mapPod(pulling('registry.example.com/app', 'gone', 'regcred'), withSecrets))
        .containerRegistryAuthId,
      42,
    );
  });

  test('not read (a comparison): no credential and no wait', () => {
    const { secrets: _, ...unread } = withSecrets;
    assert.equal(
      mapped(mapPod(pulling('registry.example.com/app', 'gone'), unread)).containerRegistryAuthId,
      undefined,
    );
  });

  test('a Secret’s facts keep its keys and registries, never a value', () => {
    const facts = pullSecret({ 'gpucloud.io/registry-auth-id': '42' }, 'registry.example.com');
    assert.deepEqual(facts, {
      keys: ['.dockerconfigjson'],
      registries: ['registry.example.com'],
      registryAuthId: '42',
    });
    assert.doesNotMatch(JSON.stringify(facts), /pa55|cm9ib3Q|robot/);
    const opaque = secretFacts({ type: 'Opaque', data: dockerConfig('registry.example.com') });
    assert.deepEqual(opaque.registries, [], 'only a dockerconfigjson Secret holds a login');
    const legacy = secretFacts({
      type: 'kubernetes.io/dockercfg',
      data: {
        '.dockercfg': Buffer.from(JSON.stringify({ 'reg.io': { password: PASSWORD } })).toString('base64'),
      },
    });
    assert.deepEqual(legacy.registries, ['reg.io'], 'a legacy dockercfg Secret: its logins at the top');
    const garbled = secretFacts({
      type: 'kubernetes.io/dockerconfigjson',
      data: { '.dockerconfigjson': 'e30K!' },
    });
    assert.deepEqual(garbled.registries, []);
  });

  test('registries as a container runtime reads an image, and the logins that cover them', () => {
    assert.deepEqual(registryOf('nginx'), { host: 'docker.io', path: 'library/nginx' });
    assert.deepEqual(registryOf('team/app:1'), { host: 'docker.io', path: 'team/app:1' });
    assert.deepEqual(registryOf('localhost/app'), { host: 'localhost', path: 'app' });
    assert.deepEqual(registryOf('Reg.io:5000/a/b'), { host: 'reg.io:5000', path: 'a/b' });
    assert.deepEqual(registryOf('index.docker.io/team/app'), { host: 'docker.io', path: 'team/app' });
    const image = registryOf('eu.reg.io/team/app:1');
    assert.ok(covers('eu.reg.io', image));
    assert.ok(covers('https://eu.reg.io/', image));
    assert.ok(covers('*.reg.io', image));
    assert.ok(covers('eu.reg.io/team', image));
    assert.ok(!covers('eu.reg.io/tea', image), 'a path covers whole segments');
    assert.ok(!covers('reg.io', image));
    assert.ok(!covers('*.io', image), 'a * is one label');
    assert.ok(covers('https://index.docker.io/v1/', registryOf('nginx')));
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
    [
      'a reserved variable from envFrom',
      pod({ envFrom: [{ configMapRef: { name: 'reserved' } }] }),
      /env POD_ID \(envFrom configMap reserved\) is reserved/,
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
