import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { z } from 'zod';
import { GpuCloudClient } from '../../src/api/client.ts';
import { collectionPath, objectPath } from '../../src/kube/resource-type.ts';
import { EXTERNAL_ID, FINALIZER } from '../../src/managed/annotations.ts';
import { eventually } from '../support/eventually.ts';
import { clientAs, grantTenant } from '../support/impersonation.ts';
import {
  API_KEY,
  condition,
  isReady,
  manifests,
  type RunningOperator,
  resources,
  startOperator,
  type TestObject,
  useStack,
} from '../support/operator.ts';

// Two teams with a cloud account each (two organisations in the simulator) beside the operator's own
// default account, on the real apiserver and the simulator over HTTP.
const KEYS = {
  teamA: 'team-a-key-one',
  teamA2: 'team-a-key-two',
  teamB: 'team-b-key-one',
  teamC: 'team-c-key-one',
  teamD: 'team-d-key-one',
};
const stack = useStack({
  apiKeys: [
    API_KEY,
    { key: KEYS.teamA, org: 'team-a' },
    { key: KEYS.teamB, org: 'team-b' },
    { key: KEYS.teamC, org: 'team-c' },
    { key: KEYS.teamD, org: 'team-d' },
  ],
});
const KEY_NS = 'gpucloud-system';
const TENANT_B = 'tenant-b';
let operator: RunningOperator;

const synced = (reason: string) => (obj: TestObject | undefined) =>
  condition(obj, 'Synced')?.reason === reason;
const podsNamed = (name: string) =>
  stack
    .sim()
    .state.snapshot()
    .pods.filter((pod) => pod.name === name);

async function keySecret(name: string, key: string): Promise<void> {
  const body = { apiVersion: 'v1', kind: 'Secret', metadata: { name }, stringData: { 'api-key': key } };
  await stack.cluster().create(resources.secret, KEY_NS, body);
}

function providerConfig(name: string, spec: Record<string, unknown>) {
  return {
    apiVersion: 'gpucloud.io/v1alpha1',
    kind: 'ProviderConfig',
    metadata: { name },
    spec: {
      apiUrl: stack.sim().url,
      credentials: { secretRef: { namespace: KEY_NS, name: `${name}-key`, key: 'api-key' } },
      ...spec,
    },
  };
}

const account = (name: string) => ({ providerConfigRef: { name } });

describe('cloud accounts per team', () => {
  before(async () => {
    const cluster = stack.cluster();
    for (const ns of [KEY_NS, 'team-a', 'team-a2', 'team-b', 'team-c', 'team-d', 'other']) {
      await cluster.ensureNamespace(ns);
    }
    await keySecret('team-a-key', KEYS.teamA);
    await keySecret('team-b-key', KEYS.teamB);
    await keySecret('team-c-key', KEYS.teamC);
    await keySecret('team-d-key', KEYS.teamD);
    await cluster.create(
      resources.providerConfig,
      '',
      providerConfig('team-d', { namespaces: { names: ['team-d'] }, guardrails: { maxLiveGpus: 10 } }),
    );
    await grantTenant(cluster.client, 'team-b', TENANT_B, ['get', 'list', 'create', 'patch', 'delete']);
    // team-c lists only its own namespace, so it allows adoption there (and only there).
    await cluster.create(
      resources.providerConfig,
      '',
      providerConfig('team-c', { namespaces: { names: ['team-c'] } }),
    );
    // team-a is shared by two namespaces, so adoption is off unless it says otherwise.
    await cluster.create(
      resources.providerConfig,
      '',
      providerConfig('team-a', { namespaces: { names: ['team-a', 'team-a2'] } }),
    );
    await cluster.create(
      resources.providerConfig,
      '',
      providerConfig('team-b', {
        namespaces: { names: ['team-b'] },
        allowedContainerRegistryAuthIds: [7],
        guardrails: { gpuTypes: ['NVIDIA L40S'], maxGpusPerResource: 2, maxLiveGpus: 3 },
      }),
    );
    // A pod no resource manages, made before the operator's first list of team-b's account.
    const teamB = new GpuCloudClient({ baseUrl: stack.sim().url, apiKey: KEYS.teamB });
    await teamB.pods.create({
      name: 'unmanaged',
      image: 'ubuntu:24.04',
      gpuType: 'NVIDIA L40S',
      gpuCount: 1,
    });
    await teamB.close();
    operator = await startOperator(stack.plane(), stack.sim());
  });
  after(() => operator.stop());

  test('a config is Ready once the cloud accepted its key, and holds a finalizer', async () => {
    for (const name of ['team-a', 'team-b']) {
      const config = await stack
        .cluster()
        .waitFor(resources.providerConfig, '', name, isReady('KeyAccepted'), 'Ready');
      assert.ok(config?.metadata.finalizers?.includes('gpucloud.io/provider-config-in-use'));
    }
  });

  test('each resource lands in the organisation of the account it names', async () => {
    const cluster = stack.cluster();
    await cluster.create(resources.gpuPod, 'team-a', manifests.gpuPod('a-pod', account('team-a')));
    await cluster.create(resources.gpuPod, 'team-b', manifests.gpuPod('b-pod', account('team-b')));
    await cluster.create(resources.gpuPod, 'other', manifests.gpuPod('default-pod'));
    for (const [ns, name] of [
      ['team-a', 'a-pod'],
      ['team-b', 'b-pod'],
      ['other', 'default-pod'],
    ] as const) {
      await cluster.waitFor(resources.gpuPod, ns, name, isReady('Running'), 'Ready');
    }
    assert.deepEqual(
      podsNamed('a-pod').map((pod) => pod.org),
      ['team-a'],
    );
    assert.deepEqual(
      podsNamed('b-pod').map((pod) => pod.org),
      ['team-b'],
    );
    assert.deepEqual(
      podsNamed('default-pod').map((pod) => pod.org),
      ['org-1'],
    );
    const config = await cluster.waitFor(
      resources.providerConfig,
      '',
      'team-a',
      (obj) => obj?.status?.users === 1,
      'one user',
    );
    assert.equal(config?.status?.users, 1);
  });

  test('a namespace the account does not allow gets a terminal condition and no cloud call', async () => {
    const creates = () => stack.sim().calls.snapshot().byOperation['pods.create'] ?? 0;
    const before = creates();
    await stack.cluster().create(resources.gpuPod, 'other', manifests.gpuPod('intruder', account('team-a')));
    const refused = await stack
      .cluster()
      .waitFor(resources.gpuPod, 'other', 'intruder', synced('ProviderConfigNotAllowed'), 'refused');
    assert.equal(condition(refused, 'Synced')?.status, 'False');
    assert.equal(creates(), before, 'no create was sent');
    assert.deepEqual(podsNamed('intruder'), []);
  });

  test('an account shared by several namespaces refuses adoption', async () => {
    const client = new GpuCloudClient({ baseUrl: stack.sim().url, apiKey: KEYS.teamA });
    try {
      const existing = await client.pods.create({
        name: 'made-by-hand',
        image: 'ubuntu:24.04',
        gpuType: 'NVIDIA L40S',
        gpuCount: 1,
      });
      const pod = manifests.gpuPod('adopter', account('team-a'), {
        annotations: { [EXTERNAL_ID]: existing.id },
      });
      await stack.cluster().create(resources.gpuPod, 'team-a2', pod);
      const refused = await stack
        .cluster()
        .waitFor(resources.gpuPod, 'team-a2', 'adopter', synced('AdoptionNotAllowed'), 'refused');
      assert.equal(refused?.status?.id, undefined, 'nothing of the object is copied');
    } finally {
      await client.close();
    }
  });

  test('every guardrail refuses before anything is sent', async () => {
    const cluster = stack.cluster();
    const creates = () => stack.sim().calls.snapshot().byOperation['pods.create'] ?? 0;
    const before = creates();
    const refusals: Array<[string, Record<string, unknown>, string]> = [
      ['wrong-type', { gpuType: 'NVIDIA GeForce RTX 4090' }, 'GuardrailExceeded'],
      ['too-many', { gpuCount: 4 }, 'GuardrailExceeded'],
      [
        'foreign-registry',
        { containerRegistryAuthId: 8, imagePublicType: 'PRIVATE' },
        'NotAllowedByProviderConfig',
      ],
    ];
    for (const [name, spec, reason] of refusals) {
      await cluster.create(
        resources.gpuPod,
        'team-b',
        manifests.gpuPod(name, { ...spec, ...account('team-b') }),
      );
      const refused = await cluster.waitFor(resources.gpuPod, 'team-b', name, synced(reason), reason);
      assert.match(condition(refused, 'Synced')?.message ?? '', /provider config team-b/);
    }
    assert.equal(creates(), before, 'none of them was sent');
  });

  test('the live-GPU limit counts every object of the account, managed or not, and frees up', async () => {
    const cluster = stack.cluster();
    // b-pod (1 GPU) runs, and the unmanaged 1-GPU pod made before the operator started: 2 of the 3 allowed.
    const pod = manifests.gpuPod('two-more', { gpuCount: 2, ...account('team-b') });
    await cluster.create(resources.gpuPod, 'team-b', pod);
    const refused = await cluster.waitFor(
      resources.gpuPod,
      'team-b',
      'two-more',
      synced('GuardrailExceeded'),
      'refused',
    );
    assert.match(condition(refused, 'Synced')?.message ?? '', /limit of 3/);
    assert.deepEqual(podsNamed('two-more'), []);
    // Pausing b-pod frees its GPU: the refused pod goes through on a later try.
    await cluster.patch(resources.gpuPod, 'team-b', 'b-pod', { spec: { paused: true } });
    await cluster.waitFor(resources.gpuPod, 'team-b', 'two-more', isReady('Running'), 'Ready', 90_000);
  });

  test('a rotated key is picked up without a restart, and the old one is no longer needed', async () => {
    const cluster = stack.cluster();
    stack.sim().keys.add(KEYS.teamA2, 'team-a');
    await cluster.patch(resources.secret, KEY_NS, 'team-a-key', { stringData: { 'api-key': KEYS.teamA2 } });
    stack.sim().keys.revoke(KEYS.teamA);
    await cluster.create(resources.gpuPod, 'team-a', manifests.gpuPod('after-rotation', account('team-a')));
    await cluster.waitFor(resources.gpuPod, 'team-a', 'after-rotation', isReady('Running'), 'Ready');
    assert.deepEqual(
      podsNamed('after-rotation').map((pod) => pod.org),
      ['team-a'],
    );
    const config = await cluster.get(resources.providerConfig, '', 'team-a');
    assert.equal(condition(config, 'Ready')?.status, 'True');
    assert.ok(!operator.logs.some((line) => line.includes(KEYS.teamA) || line.includes(KEYS.teamA2)));
  });

  test("a tenant naming another namespace's account cannot reach its objects on any path", async () => {
    // team-c runs X, made outside the cluster; a tenant of team-b guesses its id and names team-c's
    // account, with the operator's finalizer written by hand so that a delete goes to the finalize path.
    const teamC = new GpuCloudClient({ baseUrl: stack.sim().url, apiKey: KEYS.teamC });
    const tenant = clientAs(stack.plane(), TENANT_B);
    try {
      await stack.cluster().waitFor(resources.providerConfig, '', 'team-c', isReady('KeyAccepted'), 'Ready');
      const x = await teamC.pods.create({
        name: 'x',
        image: 'ubuntu:24.04',
        gpuType: 'NVIDIA L40S',
        gpuCount: 1,
      });
      // Running before the attack starts, so that "still running" after it means untouched.
      await eventually(async () => assert.equal((await teamC.pods.get(x.id)).status, 'RUNNING'));
      const mark = stack.sim().calls.log().length;
      const body = manifests.gpuPod('grab-x', account('team-c'), {
        annotations: { [EXTERNAL_ID]: x.id },
        finalizers: [FINALIZER],
      });
      await tenant.request(z.unknown(), {
        method: 'POST',
        path: collectionPath(resources.gpuPod, 'team-b'),
        body,
      });
      const refused = await stack
        .cluster()
        .waitFor(resources.gpuPod, 'team-b', 'grab-x', synced('ProviderConfigNotAllowed'), 'refused');
      assert.equal(refused?.status?.id, undefined, 'nothing of X is copied');
      // A refused resource is no user of team-c's config: it cannot block that config's deletion.
      const config = await stack.cluster().get(resources.providerConfig, '', 'team-c');
      assert.equal(config?.status?.users ?? 0, 0);
      await tenant.request(z.unknown(), {
        method: 'DELETE',
        path: objectPath(resources.gpuPod, { namespace: 'team-b', name: 'grab-x' }),
      });
      await stack
        .cluster()
        .waitFor(resources.gpuPod, 'team-b', 'grab-x', (obj) => obj === undefined, 'released');
      const touched = stack
        .sim()
        .calls.log()
        .slice(mark)
        .filter((call) => Object.values(call.params).includes(x.id));
      assert.deepEqual(touched, [], 'no call at all named X, not even a read');
      assert.equal((await teamC.pods.get(x.id)).status, 'RUNNING');
      assert.ok(!operator.logs.some((line) => line.includes(`Deleting GpuPod ${x.id}`)));
    } finally {
      await teamC.close();
    }
  });

  test('a burst against a slow cloud ends with exactly what the live-GPU limit allows', async () => {
    // team-d already runs 2 GPUs; 30 one-GPU pods are applied at once against its limit of 10, every pod
    // create taking 300 ms as a real cloud's might, with 16 reconciles at a time.
    const teamD = new GpuCloudClient({ baseUrl: stack.sim().url, apiKey: KEYS.teamD });
    const cluster = stack.cluster();
    const teamDPods = () =>
      stack
        .sim()
        .state.snapshot()
        .pods.filter((pod) => pod.org === 'team-d' && pod.status !== 'TERMINATED');
    try {
      await cluster.waitFor(resources.providerConfig, '', 'team-d', isReady('KeyAccepted'), 'Ready');
      await teamD.pods.create({
        name: 'outside',
        image: 'ubuntu:24.04',
        gpuType: 'NVIDIA L40S',
        gpuCount: 2,
      });
      stack.sim().faults.set({ latencyMs: 300, operations: ['pods.create'] });
      const names = Array.from({ length: 30 }, (_, index) => `burst-${index}`);
      await Promise.all(
        names.map((name) =>
          cluster.create(resources.gpuPod, 'team-d', manifests.gpuPod(name, account('team-d'))),
        ),
      );
      const settled = (obj: TestObject | undefined) =>
        isReady('Running')(obj) || condition(obj, 'Synced')?.reason === 'GuardrailExceeded';
      for (const name of names)
        await cluster.waitFor(resources.gpuPod, 'team-d', name, settled, 'settled', 60_000);
      assert.equal(
        teamDPods().reduce((sum, pod) => sum + pod.gpuCount, 0),
        10,
        'exactly the limit is live',
      );
    } finally {
      stack.sim().faults.set({ latencyMs: 0, operations: null });
      for (const name of Array.from({ length: 30 }, (_, index) => `burst-${index}`)) {
        await cluster.delete(resources.gpuPod, 'team-d', name);
      }
      await teamD.close();
    }
  });

  test('a config in use is not deleted until its users are gone', async () => {
    const cluster = stack.cluster();
    await cluster.delete(resources.providerConfig, '', 'team-a');
    const held = await cluster.waitFor(
      resources.providerConfig,
      '',
      'team-a',
      (obj) => condition(obj, 'Ready')?.reason === 'InUse',
      'InUse',
    );
    assert.ok(held?.metadata.deletionTimestamp);
    for (const [ns, name] of [
      ['team-a', 'a-pod'],
      ['team-a', 'after-rotation'],
      ['other', 'intruder'],
      ['team-a2', 'adopter'],
    ] as const) {
      await cluster.delete(resources.gpuPod, ns, name);
    }
    await cluster.waitFor(
      resources.providerConfig,
      '',
      'team-a',
      (obj) => obj === undefined,
      'deleted',
      60_000,
    );
  });
});
