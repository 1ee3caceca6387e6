import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CREATE_INTENT, EXTERNAL_ID } from '../../src/managed/core/annotations.ts';
import { condition, isReady, manifests, resources, useOperator, useStack } from '../support/operator.ts';

// Found by the chaos suite (bad-input): hostile annotations that stopped a resource from converging or
// from being deleted.
const NS = 'hostile';
const stack = useStack();

describe('hostile annotations', () => {
  useOperator(stack, [NS]);

  test('a create intent dated in the future is not waited for: the pod is created and deleted', async () => {
    const cluster = stack.cluster();
    const pod = manifests.gpuPod('future', {}, { annotations: { [CREATE_INTENT]: '9999999999999' } });
    await cluster.create(resources.gpuPod, NS, pod);
    await cluster.waitFor(resources.gpuPod, NS, 'future', isReady('Running'), 'Ready');
    await cluster.delete(resources.gpuPod, NS, 'future');
    await cluster.waitFor(resources.gpuPod, NS, 'future', (obj) => obj === undefined, 'gone');
  });

  test('an external-id that is no cloud id is refused, and the resource can still be deleted', async () => {
    const cluster = stack.cluster();
    const vm = manifests.gpuVm('injected', {}, { annotations: { [EXTERNAL_ID]: "'; DROP TABLE vms;--" } });
    await cluster.create(resources.gpuVm, NS, vm);
    const refused = await cluster.waitFor(
      resources.gpuVm,
      NS,
      'injected',
      (obj) => condition(obj, 'Synced')?.status === 'False',
      'Synced=False',
    );
    assert.equal(condition(refused, 'Synced')?.reason, 'ExternalResourceNotFound');
    await cluster.delete(resources.gpuVm, NS, 'injected');
    await cluster.waitFor(resources.gpuVm, NS, 'injected', (obj) => obj === undefined, 'gone');
    assert.equal(stack.sim().state.snapshot().vms.length, 0, 'nothing was created or adopted');
  });
});
