import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  isReady,
  manifests,
  type RunningOperator,
  resources,
  startOperator,
  useStack,
} from '../support/operator.ts';
import { reconciledAfter } from '../support/reconciled.ts';

// A restart rebuilds its view from the status it wrote and from the cloud's lists: a recorded id whose
// status was written from the same watched fields is trusted, not read again pod by pod.
const NS = 'restart-cost';
const PODS = 6;
const stack = useStack();
let operator: RunningOperator | undefined;
let touches = 0;

describe('an operator restart', () => {
  before(async () => {
    await stack.cluster().ensureNamespace(NS);
  });
  after(async () => {
    await operator?.stop();
  });

  test('reads only the pod that changed while no operator ran, and lists the rest', async () => {
    operator = await startOperator(stack.plane(), stack.sim());
    const names = Array.from({ length: PODS }, (_, i) => `pod-${i}`);
    for (const name of names) {
      await stack
        .cluster()
        .create(resources.gpuPod, NS, manifests.gpuPod(name, { expose: [{ port: 8888 }] }));
    }
    const ready = await Promise.all(
      names.map((name) => stack.cluster().waitFor(resources.gpuPod, NS, name, isReady(), 'Ready')),
    );
    await operator.stop();
    operator = undefined;

    const changed = String(ready[0]?.status?.id);
    assert.ok(stack.sim().faults.failPod(changed, 'FAILED'));
    const mark = stack.sim().calls.log().length;
    operator = await startOperator(stack.plane(), stack.sim());
    await stack
      .cluster()
      .waitFor(resources.gpuPod, NS, 'pod-0', (obj) => obj?.status?.phase === 'FAILED', 'FAILED');
    // Every pod reconciled by the new process, the last time in a reconcile that began after this point.
    for (const name of names) {
      await reconciledAfter(operator, { controller: 'gpupod', namespace: NS, name }, () =>
        stack.cluster().patch(resources.gpuPod, NS, name, {
          metadata: { annotations: { 'restart-cost.test/touch': String(++touches) } },
        }),
      );
    }
    const calls = stack.sim().calls.log().slice(mark);
    const gets = calls.filter((call) => call.operation === 'pods.get').map((call) => call.params.id);
    assert.deepEqual(gets, [changed], 'one get, of the pod that changed');
    assert.ok(calls.some((call) => call.operation === 'pods.list'));
    for (const name of names.slice(1)) {
      const pod = await stack.cluster().get(resources.gpuPod, NS, name);
      assert.ok(pod?.status?.sshCommand, `${name} keeps its ssh command from status`);
      assert.equal(
        (pod?.status?.exposedPorts as unknown[] | undefined)?.length,
        1,
        `${name} keeps its ports`,
      );
      assert.ok(isReady()(pod), `${name} stays Ready`);
    }
  });
});
