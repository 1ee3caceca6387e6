import { after, before, describe, test } from 'node:test';
import { CREATE_INTENT } from '../../src/resources/annotations.ts';
import {
  isReady,
  manifests,
  type RunningOperator,
  resources,
  startOperator,
  useStack,
} from '../support/operator.ts';

// Found by the chaos suite (bad-input): hostile annotations that stopped a resource from converging or
// from being deleted.
const NS = 'hostile';
const stack = useStack();
let operator: RunningOperator;

describe('hostile annotations', () => {
  before(async () => {
    await stack.cluster().ensureNamespace(NS);
    operator = await startOperator(stack.plane(), stack.sim());
  });
  after(async () => {
    await operator.stop();
  });

  test('a create intent dated in the future is not waited for: the pod is created and deleted', async () => {
    const cluster = stack.cluster();
    const pod = manifests.gpuPod('future', {}, { annotations: { [CREATE_INTENT]: '9999999999999' } });
    await cluster.create(resources.gpuPod, NS, pod);
    await cluster.waitFor(resources.gpuPod, NS, 'future', isReady('Running'), 'Ready');
    await cluster.delete(resources.gpuPod, NS, 'future');
    await cluster.waitFor(resources.gpuPod, NS, 'future', (obj) => obj === undefined, 'gone');
  });
});
