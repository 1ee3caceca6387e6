import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { z } from 'zod';
import { KubeApiError, type KubeClient } from '../../src/kube/client.ts';
import { collectionPath, objectPath } from '../../src/kube/resource-type.ts';
import {
  CREATE_INTENT,
  CREATE_NAME,
  DELETION_PROTECTION,
  EXTERNAL_ID,
} from '../../src/managed/core/annotations.ts';
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

const exec = promisify(execFile);

async function run(file: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await exec(file, args);
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return { code: failed.code ?? 1, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' };
  }
}

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
      for (const body of rendered.all(kind)) {
        await admin.request(z.unknown(), {
          method: 'POST',
          path: `/apis/admissionregistration.k8s.io/v1/${plural}`,
          body,
        });
      }
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

  test('a protected resource survives kubectl delete, a prune and a collection delete, with how to lift it', async () => {
    const protectedBy = { [DELETION_PROTECTION]: 'true' };
    await create(tenant, 'precious', protectedBy);
    const path = objectPath(resources.gpuPod, { namespace: TENANT_NS, name: 'precious' });
    // The policy takes effect a moment after it is created, like the other.
    const message = await poll(
      () => refusal(tenant.request(anyObject, { method: 'DELETE', path })).catch(() => ''),
      (text) => text !== '',
      'the deletion protection in force',
    );
    assert.match(message ?? '', /GpuPod tenant-a\/precious is protected from deletion/);
    assert.match(
      message ?? '',
      /kubectl annotate gpupod precious -n tenant-a gpucloud.io\/deletion-protection-/,
    );

    // kubectl delete, as the tenant: refused, and the message reaches the user.
    const ran = await run('/usr/bin/kubectl', [
      '--kubeconfig',
      stack.plane().kubeconfigPath,
      '--as',
      'tenant',
      'delete',
      'gpupod',
      'precious',
      '-n',
      TENANT_NS,
      '--wait=false',
    ]);
    assert.notEqual(ran.code, 0);
    assert.match(ran.stderr, /protected from deletion/);

    // Argo CD prunes with a DELETE carrying a propagation policy (foreground by default).
    assert.match(
      await refusal(
        tenant.request(anyObject, {
          method: 'DELETE',
          path,
          body: { apiVersion: 'v1', kind: 'DeleteOptions', propagationPolicy: 'Foreground' },
        }),
      ),
      /protected from deletion/,
    );
    // kubectl apply --prune, a real prune: applied with another, then left out of the manifest set.
    const dir = await mkdtemp(join(tmpdir(), 'prune-'));
    const fleet = { labels: { app: 'fleet' } };
    const both = join(dir, 'both.json');
    const kept = join(dir, 'kept.json');
    const keptPod = manifests.gpuPod('kept', {}, fleet);
    const items = [manifests.gpuPod('precious', {}, { ...fleet, annotations: protectedBy }), keptPod];
    await writeFile(both, JSON.stringify({ apiVersion: 'v1', kind: 'List', items }));
    await writeFile(kept, JSON.stringify(keptPod));
    const kubeconfig = ['--kubeconfig', stack.plane().kubeconfigPath, '--as', 'tenant', '-n', TENANT_NS];
    const applied = await run('/usr/bin/kubectl', [...kubeconfig, 'apply', '-f', both]);
    assert.equal(applied.code, 0, applied.stderr);
    const pruned = await run('/usr/bin/kubectl', [
      ...kubeconfig,
      'apply',
      '-f',
      kept,
      '--prune',
      '-l',
      'app=fleet',
      '--prune-allowlist',
      'gpucloud.io/v1alpha1/GpuPod',
    ]);
    assert.notEqual(pruned.code, 0, `${pruned.stdout}${pruned.stderr}`);
    assert.match(pruned.stderr, /protected from deletion/);
    // A namespace deletion removes its content with a collection delete: refused the same way.
    assert.match(
      await refusal(
        stack.cluster().client.request(anyObject, {
          method: 'DELETE',
          path: `${collectionPath(resources.gpuPod, TENANT_NS)}?labelSelector=app%3Dfleet`,
        }),
      ),
      /protected from deletion/,
    );
    // Nobody is exempt: not even the operator (its time-to-live deletes).
    assert.match(await refusal(operator.request(anyObject, { method: 'DELETE', path })), /protected/);
    assert.ok(await stack.cluster().get(resources.gpuPod, TENANT_NS, 'precious'));

    // Lifted by removing the annotation (or setting it to anything but "true"): then deleted.
    await patchAnnotations(tenant, 'precious', { [DELETION_PROTECTION]: null });
    await tenant.request(anyObject, { method: 'DELETE', path });
  });
});
