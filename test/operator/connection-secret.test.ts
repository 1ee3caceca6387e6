import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { z } from 'zod';
import type { KubeClient } from '../../src/kube/client.ts';
import { collectionPath, objectPath, secrets } from '../../src/kube/resource-type.ts';
import { clientAs, grantTenant } from '../support/impersonation.ts';
import {
  condition,
  isReady,
  manifests,
  type RunningOperator,
  resources,
  startOperator,
  type TestObject,
  useStack,
} from '../support/operator.ts';

// writeConnectionSecretToRef, as a tenant uses it: the operator writes the Secret the resource names, owns
// it, keeps it current, and never overwrites a Secret the resource does not control — not even one the
// tenant itself could not write (the operator must not be a deputy for writing other people's Secrets).
const NS = 'connections';
const TENANT = 'tenant-c';
const stack = useStack();
let operator: RunningOperator;
let tenant: KubeClient;

const secretSchema = z.looseObject({
  metadata: z.looseObject({
    ownerReferences: z
      .array(z.looseObject({ uid: z.string(), controller: z.boolean().optional() }))
      .optional(),
  }),
  type: z.string().optional(),
  data: z.record(z.string(), z.string()).optional(),
});

async function readSecret(name: string) {
  const secret = await stack
    .cluster()
    .client.request(secretSchema, { method: 'GET', path: objectPath(secrets, { namespace: NS, name }) });
  const data = Object.fromEntries(
    Object.entries(secret.data ?? {}).map(([key, value]) => [key, Buffer.from(value, 'base64').toString()]),
  );
  return { secret, data };
}

const create = (resource: typeof resources.gpuPod, body: Record<string, unknown>) =>
  tenant.request(z.looseObject({}), { method: 'POST', path: collectionPath(resource, NS), body });

describe('connection details in a Secret', () => {
  before(async () => {
    await stack.cluster().ensureNamespace(NS);
    await grantTenant(stack.cluster().client, NS, TENANT, ['get', 'list', 'create', 'patch', 'delete']);
    tenant = clientAs(stack.plane(), TENANT);
    operator = await startOperator(stack.plane(), stack.sim());
  });
  after(async () => {
    await operator.stop();
  });

  test('a pod writes its SSH command, host, port, internal IP and ingress URLs into a Secret it owns', async () => {
    await create(
      resources.gpuPod,
      manifests.gpuPod('notebook', {
        expose: [{ port: 8888 }],
        writeConnectionSecretToRef: { name: 'notebook-conn' },
      }),
    );
    const ready = (await stack
      .cluster()
      .waitFor(resources.gpuPod, NS, 'notebook', isReady(), 'Ready')) as TestObject;
    const { secret, data } = await readSecret('notebook-conn');
    const status = ready.status ?? {};
    assert.equal(data.sshCommand, status.sshCommand);
    assert.match(data.sshHost ?? '', /\./);
    assert.equal(data.sshPort, '22');
    assert.equal(data.internalIp, status.internalIp);
    const [port] = status.exposedPorts as Array<{ ingressUrl: string }>;
    assert.equal(data['url-8888'], port?.ingressUrl);
    assert.equal(secret.type, 'connection.gpucloud.io/v1');
    assert.deepEqual(
      secret.metadata.ownerReferences?.map((owner) => [owner.uid, owner.controller]),
      [[ready.metadata.uid, true]],
    );
  });

  test('an endpoint writes its id and domain; a change of the domain would be carried over', async () => {
    await create(
      resources.serverlessEndpoint,
      manifests.serverlessEndpoint('inference', { writeConnectionSecretToRef: { name: 'inference-conn' } }),
    );
    const ready = await stack
      .cluster()
      .waitFor(resources.serverlessEndpoint, NS, 'inference', isReady(), 'Ready');
    const { data } = await readSecret('inference-conn');
    assert.deepEqual(data, { endpointId: ready?.status?.id, domain: ready?.status?.domain });
  });

  test('a Secret the resource does not control is never overwritten, and the resource says so', async () => {
    // Written by an admin; the tenant may not even read Secrets, let alone write them.
    await stack.cluster().client.request(z.unknown(), {
      method: 'POST',
      path: collectionPath(secrets, NS),
      body: {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'db-password' },
        stringData: { password: 'hunter2' },
      },
    });
    await assert.rejects(
      tenant.request(z.unknown(), {
        method: 'GET',
        path: objectPath(secrets, { namespace: NS, name: 'db-password' }),
      }),
      'the tenant cannot read Secrets itself',
    );
    await create(
      resources.gpuPod,
      manifests.gpuPod('squatter', { writeConnectionSecretToRef: { name: 'db-password' } }),
    );
    const refused = await stack
      .cluster()
      .waitFor(
        resources.gpuPod,
        NS,
        'squatter',
        (obj) =>
          condition(obj, 'Synced')?.reason === 'ConnectionSecretNotOwned' &&
          condition(obj, 'Ready')?.status === 'True',
        'ConnectionSecretNotOwned and Ready',
      );
    // The refusal is about the Secret only: the status still tells the truth about the cloud pod.
    const id = refused?.status?.id;
    assert.ok(id, 'the cloud id is in status');
    assert.equal(refused?.status?.phase, 'RUNNING');
    assert.equal(
      stack
        .sim()
        .state.snapshot()
        .pods.find((pod) => pod.id === id)?.status,
      'RUNNING',
    );
    assert.match(condition(refused, 'Synced')?.message ?? '', /not controlled by this resource/);
    const { secret, data } = await readSecret('db-password');
    assert.deepEqual(data, { password: 'hunter2' });
    assert.equal(secret.metadata.ownerReferences, undefined);
    assert.ok(
      !JSON.stringify(refused).includes('hunter2'),
      'the Secret value appears nowhere in the resource',
    );
  });
});
