import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { DELETION_PROTECTION } from '../../src/managed/core/annotations.ts';
import {
  cloudObjects,
  condition,
  isReady,
  manifests,
  resources,
  useOperator,
  useStack,
} from '../support/operator.ts';

// The operator's own line of deletion protection, on a cluster without the admission policy: a protected
// resource deleted anyway keeps its finalizer and its cloud object, says so, and goes once unprotected.
const NS = 'protected';
const stack = useStack();

describe('deletion protection without the admission policy', () => {
  useOperator(stack, [NS]);

  test('a protected pod deleted anyway keeps its cloud pod, until the annotation goes', async () => {
    const cluster = stack.cluster();
    await cluster.create(
      resources.gpuPod,
      NS,
      manifests.gpuPod('precious', {}, { annotations: { [DELETION_PROTECTION]: 'true' } }),
    );
    const ready = await cluster.waitFor(resources.gpuPod, NS, 'precious', isReady(), 'Ready');
    const id = String(ready?.status?.id);
    const deletes = () =>
      stack
        .sim()
        .calls.log()
        .filter((call) => call.operation === 'pods.delete' && call.params.id === id);

    await cluster.delete(resources.gpuPod, NS, 'precious');
    const held = await cluster.waitFor(
      resources.gpuPod,
      NS,
      'precious',
      (obj) => condition(obj, 'Synced')?.reason === 'DeletionProtected',
      'refused',
    );
    assert.ok(held?.metadata.deletionTimestamp, 'Terminating, visibly');
    assert.match(
      String(condition(held, 'Synced')?.message),
      new RegExp(`its cloud GpuPod ${id} is not deleted\\. Remove the annotation`),
    );
    const events = await cluster.events(NS, 'precious');
    assert.ok(events.some((event) => event.type === 'Warning' && event.reason === 'DeletionProtected'));
    assert.deepEqual(deletes(), []);
    assert.equal(cloudObjects(stack.sim()).pods('precious')[0]?.status, 'RUNNING');

    await cluster.patch(resources.gpuPod, NS, 'precious', {
      metadata: { annotations: { [DELETION_PROTECTION]: null } },
    });
    await cluster.waitFor(resources.gpuPod, NS, 'precious', (obj) => obj === undefined, 'deleted');
    assert.equal(deletes().length, 1);
  });

  test('a protected resource with deletionPolicy Orphan goes at once, its cloud object untouched', async () => {
    const cluster = stack.cluster();
    await cluster.create(
      resources.gpuVm,
      NS,
      manifests.gpuVm(
        'kept',
        { deletionPolicy: 'Orphan' },
        { annotations: { [DELETION_PROTECTION]: 'true' } },
      ),
    );
    await cluster.waitFor(resources.gpuVm, NS, 'kept', isReady(), 'Ready');
    await cluster.delete(resources.gpuVm, NS, 'kept');
    await cluster.waitFor(resources.gpuVm, NS, 'kept', (obj) => obj === undefined, 'released');
    assert.equal(cloudObjects(stack.sim()).vms('kept')[0]?.status, 'RUNNING');
  });
});
