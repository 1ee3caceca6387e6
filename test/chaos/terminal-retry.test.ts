import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { condition, isReady, manifests, resources, useOperator, useStack } from '../support/operator.ts';

// Found by the chaos suite (cloud-faults): a create the cloud refused for good was sent a second time,
// because the operator's own create-intent annotation woke the resource again.
const NS = 'terminal';
const stack = useStack();

describe('a terminal failure', () => {
  const operator = useOperator(stack, [NS]);

  test('is not retried: the refused create is sent once', async () => {
    const cluster = stack.cluster();
    await cluster.create(resources.gpuVm, NS, manifests.gpuVm('refused', { vmTypeId: 999 }));
    const refused = await cluster.waitFor(
      resources.gpuVm,
      NS,
      'refused',
      (obj) => condition(obj, 'Synced')?.reason === 'CloudRejected',
      'CloudRejected',
    );
    assert.match(condition(refused, 'Synced')?.message ?? '', /vmTypeId: 999 is not a VM type/);
    // A resource created after the refusal goes through whole reconciles: any retry of the refused
    // create, woken by the operator's own writes, would have been sent by the time this one is Ready.
    await cluster.create(resources.gpuVm, NS, manifests.gpuVm('control'));
    await cluster.waitFor(resources.gpuVm, NS, 'control', isReady('Running'), 'control Ready');
    const creates = stack.sim().calls.snapshot().byOperation['vms.create'];
    assert.equal(creates, 2, 'one create for the refused VM, one for the control VM');
  });

  test('is tried again once the user changes the resource', async () => {
    const cluster = stack.cluster();
    const before = stack.sim().calls.snapshot().byOperation['vms.create'] ?? 0;
    await cluster.patch(resources.gpuVm, NS, 'refused', { metadata: { annotations: { nudge: '1' } } });
    await cluster.waitFor(
      resources.gpuVm,
      NS,
      'refused',
      () => (stack.sim().calls.snapshot().byOperation['vms.create'] ?? 0) > before,
      'a new attempt',
    );
    const refused = await cluster.get(resources.gpuVm, NS, 'refused');
    assert.equal(condition(refused, 'Synced')?.reason, 'CloudRejected');
  });

  test('is counted as controller-runtime counts it: an error, and a terminal one apart', async () => {
    // The refused VM failed twice: when created, and once more after the user's change.
    const sample = (text: string, series: string) =>
      Number(
        text
          .split('\n')
          .find((line) => line.startsWith(`${series} `))
          ?.split(' ')[1] ?? Number.NaN,
      );
    const metrics = (await operator().fetchHealth('/metrics')).body;
    assert.equal(
      sample(metrics, 'controller_runtime_terminal_reconcile_errors_total{controller="gpuvm"}'),
      2,
    );
    assert.ok(sample(metrics, 'controller_runtime_reconcile_errors_total{controller="gpuvm"}') >= 2);
    assert.ok(sample(metrics, 'controller_runtime_reconcile_total{controller="gpuvm",result="error"}') >= 2);
  });
});
