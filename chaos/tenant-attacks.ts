import { z } from 'zod';
import { GpuCloudClient } from '../src/api/client.ts';
import { unlessNotFound } from '../src/resources/common/cloud.ts';
import { collectionPath, objectPath, type ResourceType } from '../src/kube/resource-type.ts';
import { CREATE_INTENT, CREATE_NAME, EXTERNAL_ID, SKIP_RECONCILE } from '../src/managed/core/annotations.ts';
import { clientAs, grantTenant } from '../test/support/impersonation.ts';
import { condition, isReady, manifests, resources, type TestObject } from '../test/support/operator.ts';
import { poll } from '../test/support/until.ts';
import type { RunContext } from './run-context.ts';
import type { Trial } from './trial.ts';

/** What the attacks came to: how many were made, and how many foreign cloud objects any of them changed. */
export interface AttackResult {
  readonly attacks: number;
  readonly foreignObjectsTouched: number;
  readonly problems: string[];
}

const TENANT = 'chaos-tenant';
const anyObject = z.looseObject({});
const WAIT_MS = 60_000;

/**
 * A tenant whose Role allows only its own namespace tries, through RBAC impersonation, to take over
 * objects of resources in the trial's namespace (adopt by id, with a pause, a new image and workers;
 * a re-pointed id) and a VM made outside the cluster (a hand-written create intent), then deletes what
 * was refused. Every change to a foreign object counts: a mutating call on its id in the simulator's
 * log, or a state that differs afterwards. Everything made here is deleted again before the audit.
 */
export async function tenantAttacks(run: RunContext, trial: Trial, attackerNs: string): Promise<AttackResult> {
  const admin = run.cluster;
  const victimNs = trial.namespace;
  const problems: string[] = [];
  const cloud = new GpuCloudClient({ baseUrl: trial.sim.url, apiKey: run.apiKey });
  try {
    await admin.ensureNamespace(attackerNs);
    await grantTenant(admin.client, attackerNs, TENANT, ['get', 'list', 'create', 'patch', 'delete']);
    const attacker = clientAs(run.plane, TENANT);
    const victimPod = await victim(run, victimNs, resources.gpuPod, manifests.gpuPod('attack-victim-pod'));
    const victimSle = await victim(
      run,
      victimNs,
      resources.serverlessEndpoint,
      manifests.serverlessEndpoint('attack-victim-sle', { workers: 2 }),
    );
    const mark = trial.sim.calls.log().length;
    const before = { pod: await cloud.pods.get(victimPod), sle: await cloud.serverless.get(victimSle) };
    const create = (resource: ResourceType, body: Record<string, unknown>) =>
      attacker.request(anyObject, { method: 'POST', path: collectionPath(resource, attackerNs), body });
    const patch = (resource: ResourceType, name: string, body: Record<string, unknown>) =>
      attacker.request(anyObject, { method: 'PATCH', path: objectPath(resource, { namespace: attackerNs, name }), body });

    await create(resources.gpuPod, manifests.gpuPod('grab-pod', { paused: true }, { annotations: { [EXTERNAL_ID]: victimPod } }));
    const sle = { image: 'evil/miner:latest', workers: 5 };
    await create(resources.serverlessEndpoint, manifests.serverlessEndpoint('grab-sle', sle, { annotations: { [EXTERNAL_ID]: victimSle } }));
    const forged = { [SKIP_RECONCILE]: 'true', [CREATE_INTENT]: String(Date.now() - 600_000), [CREATE_NAME]: 'outside-box' };
    await create(resources.gpuVm, manifests.gpuVm('hijack', { name: 'outside-box' }, { annotations: forged }));
    const outside = await cloud.vms.create({ vmTypeId: 401, region: 'us-east-1', isSpot: false, name: 'outside-box' });
    await patch(resources.gpuVm, 'hijack', { metadata: { annotations: { [SKIP_RECONCILE]: null } } });
    await create(resources.gpuPod, manifests.gpuPod('mine'));
    await waitAs(run, attackerNs, resources.gpuPod, 'mine', isReady(), problems);
    await patch(resources.gpuPod, 'mine', { metadata: { annotations: { [EXTERNAL_ID]: victimPod } } });

    await waitAs(run, attackerNs, resources.gpuPod, 'grab-pod', synced('AlreadyManaged'), problems);
    await waitAs(run, attackerNs, resources.serverlessEndpoint, 'grab-sle', synced('AlreadyManaged'), problems);
    await waitAs(run, attackerNs, resources.gpuVm, 'hijack', isReady(), problems);
    await waitAs(run, attackerNs, resources.gpuPod, 'mine', synced('ExternalIdChanged'), problems);
    for (const [resource, name] of [
      [resources.gpuPod, 'grab-pod'],
      [resources.serverlessEndpoint, 'grab-sle'],
      [resources.gpuPod, 'mine'],
      [resources.gpuVm, 'hijack'],
    ] as const) {
      await attacker.request(z.unknown(), { method: 'DELETE', path: objectPath(resource, { namespace: attackerNs, name }) });
      await waitAs(run, attackerNs, resource, name, (obj) => obj === undefined, problems);
    }

    const foreign = [victimPod, victimSle, outside.id];
    const calls = trial.sim.calls
      .log()
      .slice(mark)
      .filter((call) => call.method !== 'GET' && Object.values(call.params).some((id) => foreign.includes(id)));
    const after = {
      pod: await unlessNotFound(cloud.pods.get(victimPod)),
      sle: await unlessNotFound(cloud.serverless.get(victimSle)),
      vm: await unlessNotFound(cloud.vms.get(outside.id)),
    };
    const changed = [
      after.pod?.status !== before.pod.status ? `pod ${victimPod} went ${before.pod.status} → ${after.pod?.status ?? 'gone'}` : '',
      after.sle?.name !== before.sle.name || after.sle?.status !== before.sle.status ? `endpoint ${victimSle} changed or went` : '',
      after.vm?.name !== 'outside-box' || (after.vm?.status ?? 'TERMINATED').startsWith('TERMINAT') ? `VM ${outside.id} changed or went` : '',
    ].filter((line) => line !== '');
    problems.push(...calls.map((call) => `${call.operation} was sent on a foreign object (${JSON.stringify(call.params)})`), ...changed);

    await unlessNotFound(cloud.vms.terminate(outside.id));
    for (const [resource, name] of [
      [resources.gpuPod, 'attack-victim-pod'],
      [resources.serverlessEndpoint, 'attack-victim-sle'],
    ] as const) {
      await admin.delete(resource, victimNs, name);
      await admin.waitFor(resource, victimNs, name, (obj) => obj === undefined, 'gone', WAIT_MS);
    }
    return { attacks: 5, foreignObjectsTouched: calls.length + changed.length, problems };
  } finally {
    await cloud.close();
  }
}

async function victim(run: RunContext, namespace: string, resource: ResourceType, body: Record<string, unknown>) {
  const name = z.object({ metadata: z.object({ name: z.string() }) }).parse(body).metadata.name;
  await run.cluster.create(resource, namespace, body);
  const ready = await run.cluster.waitFor(resource, namespace, name, isReady(), 'Ready', WAIT_MS);
  const id = ready?.status?.id;
  if (!id) throw new Error(`the attack's victim ${name} got no cloud id`);
  return id;
}

function synced(reason: string) {
  return (obj: TestObject | undefined) => condition(obj, 'Synced')?.reason === reason;
}

/** Waits for what an attacker's resource must come to; a miss is a problem of the scenario, not a throw. */
async function waitAs(
  run: RunContext,
  namespace: string,
  resource: ResourceType,
  name: string,
  check: (obj: TestObject | undefined) => boolean,
  problems: string[],
): Promise<void> {
  try {
    await poll(() => run.cluster.get(resource, namespace, name), check, `${resource.kind} ${name}`, WAIT_MS);
  } catch (error) {
    problems.push(error instanceof Error ? error.message.slice(0, 300) : String(error));
  }
}

