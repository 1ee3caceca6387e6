import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { z } from 'zod';
import { KubeApiError, type KubeClient } from '../../src/kube/client.ts';
import { collectionPath, objectPath } from '../../src/kube/resource-type.ts';
import { CREATE_INTENT, CREATE_NAME, EXTERNAL_ID } from '../../src/managed/annotations.ts';
import { bindClusterAdmin, clientAs, grantTenant } from '../support/impersonation.ts';
import { manifests, resources, useStack } from '../support/operator.ts';
import { poll } from '../support/until.ts';
import { NAMESPACE, RELEASE, renderChart } from './chart-render.ts';

// The chart's ValidatingAdmissionPolicy on the real apiserver, tried as a tenant whose Role allows
// everything on the gpucloud kinds in its namespace, and as the operator's ServiceAccount.
const TENANT_NS = 'tenant-a';
const OPERATOR = `system:serviceaccount:${NAMESPACE}:${RELEASE}`;
const stack = useStack();
let tenant: KubeClient;
let operator: KubeClient;

const anyObject = z.looseObject({});

async function refusal(request: Promise<unknown>): Promise<string> {
  try {
    await request;
  } catch (error) {
    if (error instanceof KubeApiError && (error.status === 403 || error.status === 422)) return error.message;
    throw error;
  }
  return assert.fail('the request was admitted');
}

function create(client: KubeClient, name: string, annotations: Record<string, string> = {}) {
  return client.request(anyObject, {
    method: 'POST',
    path: collectionPath(resources.gpuPod, TENANT_NS),
    body: manifests.gpuPod(name, {}, { annotations }),
  });
}

function patchAnnotations(client: KubeClient, name: string, annotations: Record<string, string | null>) {
  return client.request(anyObject, {
    method: 'PATCH',
    path: objectPath(resources.gpuPod, { namespace: TENANT_NS, name }),
    body: { metadata: { annotations } },
  });
}

/** Gives a resource the status.id the operator writes once it holds a cloud object. */
async function hold(name: string, id: string): Promise<void> {
  await stack.cluster().client.request(anyObject, {
    method: 'PATCH',
    path: `${objectPath(resources.gpuPod, { namespace: TENANT_NS, name })}/status`,
    body: { status: { id } },
  });
}

describe('the admission policy on the operator annotations', () => {
  before(async () => {
    const admin = stack.cluster().client;
    await stack.cluster().ensureNamespace(TENANT_NS);
    await grantTenant(admin, TENANT_NS, 'tenant', ['get', 'list', 'create', 'update', 'patch', 'delete']);
    // The operator's own permissions are the chart's; here it may do anything, so only the policy decides.
    await bindClusterAdmin(admin, 'policy-test-operator', { namespace: NAMESPACE, name: RELEASE });
    const rendered = await renderChart();
    for (const kind of ['ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding']) {
      const plural =
        kind === 'ValidatingAdmissionPolicy'
          ? 'validatingadmissionpolicies'
          : 'validatingadmissionpolicybindings';
      await admin.request(z.unknown(), {
        method: 'POST',
        path: `/apis/admissionregistration.k8s.io/v1/${plural}`,
        body: rendered.one(kind),
      });
    }
    tenant = clientAs(stack.plane(), 'tenant');
    operator = clientAs(stack.plane(), OPERATOR);
    // A new policy takes effect a moment after it is created: wait until it refuses a known-bad request.
    await poll(
      async () => {
        try {
          await create(tenant, `probe-${Date.now()}`, { [CREATE_INTENT]: '1' });
          return false;
        } catch (error) {
          if (error instanceof KubeApiError && /written by the operator only/.test(error.message))
            return true;
          throw error;
        }
      },
      (refused) => refused,
      'the policy in force',
    );
  });

  test('a tenant cannot write the create intent or name, on create or on update', async () => {
    assert.match(
      await refusal(create(tenant, 'forged', { [CREATE_INTENT]: String(Date.now()) })),
      /operator only/,
    );
    assert.match(
      await refusal(create(tenant, 'forged-name', { [CREATE_NAME]: 'victim-vm' })),
      /operator only/,
    );
    await create(tenant, 'plain');
    assert.match(
      await refusal(patchAnnotations(tenant, 'plain', { [CREATE_NAME]: 'victim-vm' })),
      /operator only/,
    );
  });

  test('a tenant may adopt by id on create, and edit its spec, but not swap the id it holds', async () => {
    await create(tenant, 'adopter', { [EXTERNAL_ID]: '10000001' });
    await hold('adopter', '10000001');
    assert.match(
      await refusal(patchAnnotations(tenant, 'adopter', { [EXTERNAL_ID]: '10000002' })),
      /cannot change or go while the resource manages cloud object 10000001/,
    );
    assert.match(await refusal(patchAnnotations(tenant, 'adopter', { [EXTERNAL_ID]: null })), /10000001/);
    await tenant.request(anyObject, {
      method: 'PATCH',
      path: objectPath(resources.gpuPod, { namespace: TENANT_NS, name: 'adopter' }),
      body: { spec: { paused: true } },
    });
  });

  test('before the resource holds an object, its external-id may still be fixed', async () => {
    await create(tenant, 'typo', { [EXTERNAL_ID]: '1234' });
    await patchAnnotations(tenant, 'typo', { [EXTERNAL_ID]: '10000003' });
  });

  test('the operator writes all of them', async () => {
    await create(operator, 'by-operator', { [CREATE_INTENT]: '1', [CREATE_NAME]: 'x' });
    await hold('by-operator', '10000004');
    await patchAnnotations(operator, 'by-operator', {
      [EXTERNAL_ID]: '10000005',
      [CREATE_INTENT]: null,
      [CREATE_NAME]: null,
    });
    const stored = await stack.cluster().get(resources.gpuPod, TENANT_NS, 'by-operator');
    assert.equal(stored?.metadata.annotations?.[EXTERNAL_ID], '10000005');
  });
});
