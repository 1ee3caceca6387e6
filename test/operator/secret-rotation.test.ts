import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { GpuCloudClient } from '../../src/api/client.ts';
import {
  API_KEY,
  condition,
  isReady,
  manifests,
  resources,
  type TestObject,
  useOperator,
  useStack,
} from '../support/operator.ts';
import { poll } from '../support/until.ts';

// A rotated Secret, noticed by the operator on its default interval (30 s) by reading the Secret by name:
// the endpoint's env in the cloud follows within a minute, and a pod, whose env the cloud cannot change,
// says so, naming the Secret and never a value.
const NS = 'rotation';
const stack = useStack();

const fromSecret = (key: string, name: string) => ({
  key,
  valueFrom: { secretKeyRef: { name, key: 'token' } },
});

describe('Secret rotation', () => {
  // Details on their default interval (5 min), so that nothing but the Secret watch wakes the resources.
  useOperator(stack, [NS], { flags: ['--details-interval', '300'] });
  let cloud: GpuCloudClient;
  before(async () => {
    cloud = new GpuCloudClient({ baseUrl: stack.sim().url, apiKey: API_KEY });
    for (const name of ['endpoint-token', 'pod-token', 'replaced-token']) {
      await stack.cluster().create(resources.secret, NS, {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name },
        stringData: { token: `${name}-old-value` },
      });
    }
  });
  after(async () => {
    await cloud.close();
  });

  test('admission refuses secretRotationPolicy Recreate without Create and Delete', async () => {
    await assert.rejects(
      stack
        .cluster()
        .create(
          resources.gpuPod,
          NS,
          manifests.gpuPod('observed', { managementPolicies: ['Observe'], secretRotationPolicy: 'Recreate' }),
        ),
      /secretRotationPolicy Recreate needs Create and Delete in managementPolicies/,
    );
  });

  const rotate = (name: string) =>
    stack.cluster().patch(resources.secret, NS, name, { stringData: { token: `${name}-new-value` } });

  test('a rotated Secret reaches the endpoint’s env in the cloud within a minute, a pod reports it cannot, and one that asks is recreated', async (t) => {
    const cluster = stack.cluster();
    await cluster.create(
      resources.serverlessEndpoint,
      NS,
      manifests.serverlessEndpoint('api', { envVars: [fromSecret('API_TOKEN', 'endpoint-token')] }),
    );
    await cluster.create(
      resources.gpuPod,
      NS,
      manifests.gpuPod('trainer', { environmentVars: [fromSecret('HF_TOKEN', 'pod-token')] }),
    );
    await cluster.create(
      resources.gpuPod,
      NS,
      manifests.gpuPod('renewed', {
        environmentVars: [fromSecret('HF_TOKEN', 'replaced-token')],
        secretRotationPolicy: 'Recreate',
      }),
    );
    const endpoint = await cluster.waitFor(resources.serverlessEndpoint, NS, 'api', isReady(), 'Ready');
    const renewed = await cluster.waitFor(resources.gpuPod, NS, 'renewed', isReady(), 'Ready');
    const oldId = String(renewed?.status?.id);
    const pod = await cluster.waitFor(resources.gpuPod, NS, 'trainer', isReady(), 'Ready');
    assert.equal(condition(pod, 'Synced')?.status, 'True');
    const endpointEnv = async () =>
      (await cloud.serverless.list()).find((each) => each.id === endpoint?.status?.id)?.environmentVars ?? [];
    assert.ok((await endpointEnv()).some(({ value }) => value === 'endpoint-token-old-value'));

    const rotatedAt = Date.now();
    await rotate('endpoint-token');
    await rotate('pod-token');
    await rotate('replaced-token');
    await poll(
      endpointEnv,
      (env) => env.some(({ key, value }) => key === 'API_TOKEN' && value === 'endpoint-token-new-value'),
      'the new value in the endpoint’s env',
      60_000,
    );
    t.diagnostic(`the endpoint's env took the new value ${Date.now() - rotatedAt} ms after the rotation`);

    const reported = await cluster.waitFor(
      resources.gpuPod,
      NS,
      'trainer',
      (obj: TestObject | undefined) => condition(obj, 'Synced')?.reason === 'SecretRotated',
      'SecretRotated',
      60_000,
    );
    const synced = condition(reported, 'Synced');
    assert.equal(synced?.status, 'False');
    assert.match(String(synced?.message), /Secret "pod-token" changed since the cloud GpuPod was created/);
    assert.ok(isReady()(reported), 'the pod still runs');
    // The cloud pod keeps what it was made with, and no value is shown anywhere.
    const cloudPod = await cloud.pods.get(String(reported?.status?.id));
    assert.ok(cloudPod.environmentVars.some(({ value }) => value === 'pod-token-old-value'));
    const shown = JSON.stringify([
      reported,
      await cluster.events(NS, 'trainer'),
      await cluster.events(NS, 'api'),
    ]);
    for (const value of ['old-value', 'new-value']) assert.ok(!shown.includes(value), `${value} shown`);
    const events = await cluster.events(NS, 'trainer');
    assert.ok(events.some((event) => event.type === 'Warning' && event.reason === 'SecretRotated'));

    // secretRotationPolicy Recreate: the old pod deleted, a new one made with the new value.
    const recreated = await cluster.waitFor(
      resources.gpuPod,
      NS,
      'renewed',
      (obj) => obj?.status?.id !== undefined && obj.status.id !== oldId && isReady()(obj),
      'recreated',
      60_000,
    );
    assert.equal(condition(recreated, 'Synced')?.status, 'True');
    const fresh = await cloud.pods.get(String(recreated?.status?.id));
    assert.ok(fresh.environmentVars.some(({ value }) => value === 'replaced-token-new-value'));
    assert.ok(['TERMINATING', 'TERMINATED'].includes((await cloud.pods.get(oldId)).status));
    const recreating = (await cluster.events(NS, 'renewed')).find((event) => event.reason === 'Recreating');
    assert.match(
      String(recreating?.message),
      /to create it again with the new values of Secret "replaced-token"/,
    );
  });
});
