import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { z } from 'zod';
import type { KubeClient } from '../../src/kube/client.ts';
import { collectionPath, configMaps, objectPath, pods } from '../../src/kube/resource-type.ts';
import { clientAs, grantPods, grantTenant } from '../support/impersonation.ts';
import { type RunningOperator, resources, startOperator } from '../support/operator.ts';
import { poll } from '../support/until.ts';
import {
  cloudCreates,
  createAccountKey,
  createDefaultServiceAccount,
  listGpuPods,
  readPod,
  running,
  useTeamsStack,
  VIRTUAL_NODE_TOLERATION,
  virtualNodeProviderConfig,
} from '../support/virtual-node.ts';

// A Pod's envFrom, $(VAR) references and imagePullSecrets through the real apiserver, the operator
// in-process and the simulator over HTTP, as a tenant who may make Pods and nothing of Secrets: the cloud
// pod's create carries the environment (the Secret's value only there) and the registry credential the
// Pod's own Secret names; no Secret value is in the GpuPod, the Pod, an event or a log; and a Secret of
// another namespace cannot be used.
const TEAM_KEY = 'team-a-env-key';
const stack = useTeamsStack({ 'team-a': TEAM_KEY });
const NS = 'team-a';
const OTHER_NS = 'team-b';
const KEY_NS = 'gpucloud-system';
const NODE = 'gpucloud-team-a';
const TENANT = 'dana';
const HF_TOKEN = 'hf-token-value-never-written';
const REGISTRY_PASSWORD = 'registry-password-never-written';
const OTHER_PASSWORD = 'other-namespace-password-never-written';
const SECRET_TEXTS = [HF_TOKEN, REGISTRY_PASSWORD, OTHER_PASSWORD];

let admin: KubeClient;
let tenant: KubeClient;
let operator: RunningOperator;

/** A dockerconfigjson Secret with a login for `registry`, naming cloud credential `id`. */
function pullSecret(name: string, registry: string, password: string, id: string) {
  const auths = { [registry]: { username: 'robot', password } };
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    type: 'kubernetes.io/dockerconfigjson',
    metadata: { name, annotations: { 'gpucloud.io/registry-auth-id': id } },
    stringData: { '.dockerconfigjson': JSON.stringify({ auths }) },
  };
}

function podOn(name: string, container: Record<string, unknown>, pullSecrets: string[]) {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name },
    spec: {
      nodeName: NODE,
      tolerations: [VIRTUAL_NODE_TOLERATION],
      imagePullSecrets: pullSecrets.map((each) => ({ name: each })),
      containers: [
        {
          name: 'main',
          image: 'registry.example.com/team/llm:1',
          resources: { limits: { 'nvidia.com/gpu': '1' } },
          ...container,
        },
      ],
    },
  };
}

const eventList = z.object({
  items: z.array(z.looseObject({ reason: z.string().optional(), message: z.string().optional() })),
});
const readEvents = () => admin.request(eventList, { method: 'GET', path: `/api/v1/namespaces/${NS}/events` });

const gpuPodSchema = z.looseObject({
  spec: z.looseObject({
    containerRegistryAuthId: z.number().optional(),
    imagePublicType: z.string().optional(),
    environmentVars: z.array(z.looseObject({ key: z.string() })).optional(),
  }),
});

function assertNoSecretIn(what: string, text: string): void {
  for (const secret of SECRET_TEXTS) assert.ok(!text.includes(secret), `${what} holds a Secret's value`);
}

describe('a Pod’s envFrom, $(VAR) references and image pull secret on the virtual node', () => {
  before(async () => {
    const cluster = stack.cluster();
    admin = cluster.client;
    for (const namespace of [KEY_NS, NS, OTHER_NS]) await cluster.ensureNamespace(namespace);
    await createDefaultServiceAccount(admin, NS);
    await createAccountKey(admin, KEY_NS, 'team-a', TEAM_KEY);
    await admin.request(z.unknown(), {
      method: 'POST',
      path: collectionPath(configMaps, NS),
      body: { metadata: { name: 'settings' }, data: { MODEL: 'llama-3', '1ST': 'x' } },
    });
    await cluster.create(resources.secret, NS, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'hf' },
      stringData: { HF_TOKEN },
    });
    await cluster.create(
      resources.secret,
      NS,
      pullSecret('regcred', 'registry.example.com', REGISTRY_PASSWORD, '42'),
    );
    await cluster.create(
      resources.secret,
      OTHER_NS,
      pullSecret('othercred', 'registry.example.com', OTHER_PASSWORD, '77'),
    );
    operator = await startOperator(stack.plane(), stack.sim(), {
      apiKey: 'operator-default-key',
      flags: ['--virtual-nodes', 'true', '--virtual-node-address', '10.1.2.3'],
    });
    await cluster.create(
      resources.providerConfig,
      '',
      virtualNodeProviderConfig({
        name: 'team-a',
        namespace: NS,
        apiUrl: stack.sim().url,
        keyNamespace: KEY_NS,
      }),
    );
    // Pods and the gpucloud kinds, nothing of Secrets: a Pod names them, as any Pod may in its namespace.
    await grantTenant(admin, NS, TENANT, ['get', 'list', 'watch']);
    await grantPods(admin, NS, TENANT);
    tenant = clientAs(stack.plane(), TENANT);
  });
  after(async () => {
    await operator?.stop();
  });

  test('the create carries the environment and the registry credential; no Secret value is written anywhere', async () => {
    await tenant.request(z.unknown(), {
      method: 'POST',
      path: collectionPath(pods, NS),
      body: podOn(
        'private',
        {
          command: ['serve', '--model=$(MODEL)', '--token=$(HF_TOKEN)', '$$(MODEL)'],
          envFrom: [{ configMapRef: { name: 'settings' } }, { secretRef: { name: 'hf' } }],
          env: [
            { name: 'URL', value: 'http://models/$(MODEL)' },
            { name: 'TOKEN_COPY', value: '$(HF_TOKEN)' },
          ],
        },
        ['regcred'],
      ),
    });
    const up = await poll(() => readPod(admin, NS, 'private'), running, 'the Pod Running', 60_000);
    const cloud = stack
      .sim()
      .state.snapshot()
      .pods.find((pod) => pod.name === 'private');
    assert.ok(cloud, 'the cloud pod made');
    assert.equal(cloud.registryAuthId, '42', 'pulled with the credential the Pod’s own Secret names');
    assert.equal(cloud.initializationCommand, `serve --model=llama-3 --token="\${HF_TOKEN}" '$(MODEL)'`);
    assert.equal(cloud.environment.MODEL, 'llama-3');
    assert.equal(cloud.environment.URL, 'http://models/llama-3');
    // The Secret's value reaches the cloud pod's environment, and nothing else.
    assert.equal(cloud.environment.HF_TOKEN, HF_TOKEN);
    assert.equal(cloud.environment.TOKEN_COPY, HF_TOKEN);
    assert.equal(cloud.environment['1ST'], undefined);

    const gpuPod = await admin.request(gpuPodSchema, {
      method: 'GET',
      path: objectPath(resources.gpuPod, { namespace: NS, name: 'private' }),
    });
    assert.equal(gpuPod.spec.containerRegistryAuthId, 42);
    assert.equal(gpuPod.spec.imagePublicType, 'PRIVATE');
    assert.deepEqual(
      gpuPod.spec.environmentVars?.find((each) => each.key === 'HF_TOKEN'),
      { key: 'HF_TOKEN', valueFrom: { secretKeyRef: { name: 'hf', key: 'HF_TOKEN' } } },
    );
    const skipped = `Keys [1ST] from the EnvFrom configMap ${NS}/settings were skipped since they are considered invalid environment variable names.`;
    // The skipped key is told in the Pod's events, as a kubelet tells it.
    const events = await poll(
      readEvents,
      ({ items }) =>
        items.some(
          (event) => event.reason === 'InvalidEnvironmentVariableNames' && event.message === skipped,
        ),
      'the skipped key told in the Pod’s events',
    );
    assertNoSecretIn('the GpuPod', JSON.stringify(gpuPod));
    assertNoSecretIn('the Pod', JSON.stringify(up));
    assertNoSecretIn('the events', JSON.stringify(events));
    assertNoSecretIn('the operator’s log', operator.logs.join('\n'));
  });

  test('a Secret of another namespace cannot be used: the Pod waits for one of its own, no cloud call', async () => {
    const before = cloudCreates(stack.sim()).length;
    await tenant.request(z.unknown(), {
      method: 'POST',
      path: collectionPath(pods, NS),
      body: podOn('borrowed', {}, ['othercred']),
    });
    const waiting = await poll(
      () => readPod(admin, NS, 'borrowed'),
      (pod) => pod.status.containerStatuses?.[0]?.state.waiting?.reason === 'CreateContainerConfigError',
      'the Pod waiting for its pull secret',
    );
    assert.match(
      JSON.stringify(waiting.status.containerStatuses?.[0]?.state.waiting),
      /imagePullSecrets: secret \\"othercred\\" not found in namespace team-a/,
    );
    assert.equal(cloudCreates(stack.sim()).length, before);
    assert.deepEqual(
      (await listGpuPods(admin, NS)).map((each) => each.metadata.name),
      ['private'],
    );
    assert.ok(
      stack
        .sim()
        .state.snapshot()
        .pods.every((pod) => pod.registryAuthId !== '77'),
      'the other namespace’s credential used by no cloud pod',
    );
    assertNoSecretIn('the operator’s log', operator.logs.join('\n'));
  });
});
