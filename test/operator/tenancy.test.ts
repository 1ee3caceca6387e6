import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { z } from 'zod';
import { GpuCloudClient } from '../../src/api/client.ts';
import type { KubeClient } from '../../src/kube/client.ts';
import { collectionPath, objectPath, type ResourceType } from '../../src/kube/resource-type.ts';
import {
  CREATE_INTENT,
  CREATE_NAME,
  EXTERNAL_ID,
  SKIP_RECONCILE,
} from '../../src/managed/core/annotations.ts';
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

// The attacks of a tenant in a shared cluster, each run as that tenant (RBAC impersonation, a Role in
// its own namespace and nothing more) against a victim in another namespace. No admission policy is
// installed here: the operator must hold on its own. Each attack must leave the victim untouched: the
// same cloud id and state, and no mutating call on its id in the simulator's log.
const VICTIM_NS = 'ns-a';
const ATTACKER_NS = 'ns-b';
const stack = useStack();
let operator: RunningOperator;
let attacker: KubeClient;
let cloud: GpuCloudClient;

const anyObject = z.looseObject({});

function attack(resource: ResourceType, body: Record<string, unknown>) {
  return attacker.request(anyObject, { method: 'POST', path: collectionPath(resource, ATTACKER_NS), body });
}

function attackerPatch(resource: ResourceType, name: string, body: Record<string, unknown>) {
  return attacker.request(anyObject, {
    method: 'PATCH',
    path: objectPath(resource, { namespace: ATTACKER_NS, name }),
    body,
  });
}

/** Every call since `from` (an index into the log) that could change cloud object `id`. */
function mutationsOf(id: string, from: number) {
  return stack
    .sim()
    .calls.log()
    .slice(from)
    .filter((call) => call.method !== 'GET' && Object.values(call.params).includes(id));
}

const logMark = () => stack.sim().calls.log().length;

async function victim(resource: ResourceType, body: Record<string, unknown>, name: string): Promise<string> {
  await stack.cluster().create(resource, VICTIM_NS, body);
  const ready = await stack.cluster().waitFor(resource, VICTIM_NS, name, isReady(), 'Ready');
  const id = ready?.status?.id;
  assert.ok(id, `${name} has a cloud id`);
  return id;
}

const refusedWith = (reason: string) => (obj: TestObject | undefined) =>
  condition(obj, 'Synced')?.reason === reason;

/** The victim's fields an attacker must not see copied into its own status. */
function leaked(obj: TestObject | undefined): string[] {
  const status: Record<string, unknown> = obj?.status ?? {};
  return ['id', 'sshCommand', 'internalIp', 'exposedPorts', 'ipAddress', 'domainName', 'domain'].filter(
    (field) => status[field] !== undefined,
  );
}

describe('a tenant attacking another namespace', () => {
  before(async () => {
    const cluster = stack.cluster();
    await cluster.ensureNamespace(VICTIM_NS);
    await cluster.ensureNamespace(ATTACKER_NS);
    await grantTenant(cluster.client, ATTACKER_NS, 'tenant-b', ['get', 'list', 'create', 'patch', 'delete']);
    attacker = clientAs(stack.plane(), 'tenant-b');
    cloud = new GpuCloudClient({ baseUrl: stack.sim().url, apiKey: API_KEY });
    operator = await startOperator(stack.plane(), stack.sim());
  });
  after(async () => {
    await operator.stop();
    await cloud.close();
  });

  test('adopting a pod by its id is refused: no pause reaches it, nothing of it is copied', async () => {
    const id = await victim(resources.gpuPod, manifests.gpuPod('victim-pod'), 'victim-pod');
    const mark = logMark();
    await attack(
      resources.gpuPod,
      manifests.gpuPod('grab-pod', { paused: true }, { annotations: { [EXTERNAL_ID]: id } }),
    );
    const refused = await stack
      .cluster()
      .waitFor(resources.gpuPod, ATTACKER_NS, 'grab-pod', refusedWith('AlreadyManaged'), 'AlreadyManaged');
    assert.equal(condition(refused, 'Synced')?.status, 'False');
    assert.ok(!condition(refused, 'Synced')?.message.includes(VICTIM_NS), 'names no other namespace');
    assert.ok(!condition(refused, 'Synced')?.message.includes('victim-pod'), 'names no other resource');
    assert.deepEqual(leaked(refused), []);
    assert.deepEqual(mutationsOf(id, mark), []);
    assert.equal((await cloud.pods.get(id)).status, 'RUNNING');
  });

  test('adopting an endpoint or a VM by id pushes no image, workers or name onto it', async () => {
    const endpointId = await victim(
      resources.serverlessEndpoint,
      manifests.serverlessEndpoint('victim-sle', { workers: 2 }),
      'victim-sle',
    );
    const vmId = await victim(resources.gpuVm, manifests.gpuVm('victim-vm'), 'victim-vm');
    const mark = logMark();
    const endpoint = manifests.serverlessEndpoint(
      'grab-sle',
      { image: 'evil/miner:latest', workers: 8 },
      { annotations: { [EXTERNAL_ID]: endpointId } },
    );
    await attack(resources.serverlessEndpoint, endpoint);
    await attack(
      resources.gpuVm,
      manifests.gpuVm('grab-vm', { name: 'pwned' }, { annotations: { [EXTERNAL_ID]: vmId } }),
    );
    for (const [resource, name] of [
      [resources.serverlessEndpoint, 'grab-sle'],
      [resources.gpuVm, 'grab-vm'],
    ] as const) {
      const refused = await stack
        .cluster()
        .waitFor(resource, ATTACKER_NS, name, refusedWith('AlreadyManaged'), 'AlreadyManaged');
      assert.deepEqual(leaked(refused), [], name);
    }
    assert.deepEqual(mutationsOf(endpointId, mark), []);
    assert.deepEqual(mutationsOf(vmId, mark), []);
    assert.equal((await cloud.vms.get(vmId)).name, 'victim-vm');
  });

  test('a hand-written create intent does not take over a VM nobody recorded', async () => {
    // The attacker's resource waits (skip-reconcile) with a forged intent naming a VM that does not
    // exist yet; another team then makes that VM outside the cluster; the attacker lets go.
    const forged = {
      [SKIP_RECONCILE]: 'true',
      [CREATE_INTENT]: String(Date.now() - 10 * 60_000),
      [CREATE_NAME]: 'team-c-box',
    };
    await attack(resources.gpuVm, manifests.gpuVm('hijack', { name: 'team-c-box' }, { annotations: forged }));
    const outside = await cloud.vms.create({
      vmTypeId: 401,
      region: 'us-east-1',
      isSpot: false,
      name: 'team-c-box',
    });
    const mark = logMark();
    await attackerPatch(resources.gpuVm, 'hijack', { metadata: { annotations: { [SKIP_RECONCILE]: null } } });
    const own = await stack.cluster().waitFor(resources.gpuVm, ATTACKER_NS, 'hijack', isReady(), 'Ready');
    assert.notEqual(own?.status?.id, outside.id, 'the operator made the attacker its own VM instead');
    assert.deepEqual(mutationsOf(outside.id, mark), []);
    assert.equal((await cloud.vms.get(outside.id)).status, 'RUNNING');
  });

  test('re-pointing the id of a live resource is refused, and neither object is touched', async () => {
    const target = await victim(resources.gpuPod, manifests.gpuPod('victim-two'), 'victim-two');
    await attack(resources.gpuPod, manifests.gpuPod('mine'));
    const mine = await stack.cluster().waitFor(resources.gpuPod, ATTACKER_NS, 'mine', isReady(), 'Ready');
    const ownId = mine?.status?.id ?? '';
    const mark = logMark();
    await attackerPatch(resources.gpuPod, 'mine', { metadata: { annotations: { [EXTERNAL_ID]: target } } });
    const refused = await stack
      .cluster()
      .waitFor(resources.gpuPod, ATTACKER_NS, 'mine', refusedWith('ExternalIdChanged'), 'ExternalIdChanged');
    assert.match(condition(refused, 'Synced')?.message ?? '', new RegExp(`manages GpuPod ${ownId}`));
    assert.equal(refused?.status?.id, ownId, 'the resource still answers for its own object');
    assert.deepEqual(mutationsOf(target, mark), []);
    assert.deepEqual(mutationsOf(ownId, mark), []);
    assert.equal(
      (await cloud.pods.get(ownId)).status,
      'RUNNING',
      'the first object is not orphaned silently',
    );
  });

  test('deleting a refused claim deletes nothing of the victim', async () => {
    const [pod] = stack
      .sim()
      .state.snapshot()
      .pods.filter((candidate) => candidate.name === 'victim-pod');
    assert.ok(pod);
    const mark = logMark();
    await attacker.request(z.unknown(), {
      method: 'DELETE',
      path: objectPath(resources.gpuPod, { namespace: ATTACKER_NS, name: 'grab-pod' }),
    });
    await stack
      .cluster()
      .waitFor(resources.gpuPod, ATTACKER_NS, 'grab-pod', (obj) => obj === undefined, 'gone');
    assert.deepEqual(mutationsOf(pod.id, mark), []);
    assert.equal((await cloud.pods.get(pod.id)).status, 'RUNNING');
    const owner = await stack.cluster().get(resources.gpuPod, VICTIM_NS, 'victim-pod');
    assert.equal(owner?.status?.id, pod.id, 'the victim still holds the same object');
  });
});
