import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { GpuCloudClient } from '../../src/api/client.ts';
import { FINALIZER, SKIP_RECONCILE } from '../../src/managed/core/annotations.ts';
import {
  API_KEY,
  isReady,
  manifests,
  operatorIntent,
  type RunningOperator,
  resources,
  startOperator,
  useStack,
} from '../support/operator.ts';

// Found by the chaos suite (operator-crashes, full profile, seed 661168635: 5 VMs left running): a VM
// carries no owner marker, so crash recovery finds an interrupted create by the VM's name — the name in
// the spec *now*. A resource renamed after its create was sent and before the id was recorded no longer
// matches the VM that create made: recovery creates a second one, and a deletion leaves the first behind.
const NS = 'vm-rename';
const stack = useStack();
let operator: RunningOperator;
let client: GpuCloudClient;

/**
 * A GpuVm as a process killed mid-create leaves it: intent (with the name the create was sent with)
 * recorded long enough ago, no id. Held until released.
 */
async function interrupted(name: string) {
  const held = { [SKIP_RECONCILE]: 'true' };
  const cr = await stack
    .cluster()
    .create(resources.gpuVm, NS, manifests.gpuVm(name, {}, { finalizers: [FINALIZER], annotations: held }));
  const annotations = operatorIntent(cr.metadata.uid, name);
  return stack.cluster().patch(resources.gpuVm, NS, name, { metadata: { annotations } });
}

async function renameAndRelease(name: string, to: string): Promise<void> {
  await stack.cluster().patch(resources.gpuVm, NS, name, {
    metadata: { annotations: { [SKIP_RECONCILE]: null } },
    spec: { name: to },
  });
}

const liveVms = () =>
  stack
    .sim()
    .state.snapshot()
    .vms.filter((vm) => !vm.status.startsWith('TERMINAT'));

describe('a VM renamed while its create was interrupted', () => {
  before(async () => {
    await stack.cluster().ensureNamespace(NS);
    client = new GpuCloudClient({ baseUrl: stack.sim().url, apiKey: API_KEY });
    operator = await startOperator(stack.plane(), stack.sim());
  });
  after(async () => {
    await operator.stop();
    await client.close();
  });

  test('is found under the name its create was sent with, adopted and renamed, not created again', async () => {
    await interrupted('first');
    const made = await client.vms.create({
      vmTypeId: 401,
      region: 'us-east-1',
      isSpot: false,
      name: 'first',
    });
    await renameAndRelease('first', 'first-renamed');
    const adopted = await stack.cluster().waitFor(resources.gpuVm, NS, 'first', isReady('Running'), 'Ready');
    assert.equal(adopted?.status?.id, made.id, 'the VM the interrupted create made');
    assert.deepEqual(
      liveVms().map((vm) => vm.name),
      ['first-renamed'],
      'one VM, renamed as the spec asks',
    );
  });

  test('is deleted with the resource, not left running', async () => {
    // Staged while no operator runs, as after a crash: renamed, then deleted, before anyone recorded the id.
    await operator.stop();
    const vm = manifests.gpuVm('second', {}, { finalizers: [FINALIZER] });
    const cr = await stack.cluster().create(resources.gpuVm, NS, vm);
    const annotations = operatorIntent(cr.metadata.uid, 'second');
    await stack.cluster().patch(resources.gpuVm, NS, 'second', { metadata: { annotations } });
    const made = await client.vms.create({
      vmTypeId: 401,
      region: 'us-east-1',
      isSpot: false,
      name: 'second',
    });
    await stack.cluster().patch(resources.gpuVm, NS, 'second', { spec: { name: 'second-renamed' } });
    await stack.cluster().delete(resources.gpuVm, NS, 'second');
    operator = await startOperator(stack.plane(), stack.sim());
    await stack.cluster().waitFor(resources.gpuVm, NS, 'second', (obj) => obj === undefined, 'gone');
    assert.ok(!liveVms().some((candidate) => candidate.id === made.id), 'the VM that create made is deleted');
  });

  test('is created under an intent that names it: a lost answer is then found, not created again', async () => {
    // An intent left by a process killed before its create was sent, then the rename: nothing to find.
    await interrupted('third');
    stack.sim().faults.set({ dropRate: 1, dropAfterEffect: true, operations: ['vms.create'] });
    try {
      await renameAndRelease('third', 'third-renamed');
      // Every create is carried out and its answer lost: only a search by the right name ends this.
      await stack.cluster().waitFor(resources.gpuVm, NS, 'third', isReady('Running'), 'Ready');
    } finally {
      stack.sim().faults.reset();
    }
    const named = liveVms().filter((vm) => vm.name.startsWith('third'));
    assert.deepEqual(
      named.map((vm) => vm.name),
      ['third-renamed'],
      'one VM',
    );
  });
});
