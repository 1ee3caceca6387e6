import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { cloudObjects, isReady, manifests, resources, startOperator, useStack } from '../support/operator.ts';
import { poll } from '../support/until.ts';

const NS = 'failover';
const stack = useStack();

const ready = isReady();
const gpuPod = manifests.gpuPod;
const cloudPods = (name: string) => cloudObjects(stack.sim()).pods(name);

describe('operator restarts and leader election', () => {
  test('a restarted operator picks up where the last one stopped, without a second create', async () => {
    const cluster = stack.cluster();
    await cluster.ensureNamespace(NS);
    const first = await startOperator(stack.plane(), stack.sim());
    await cluster.create(resources.gpuPod, NS, gpuPod('survivor'));
    await cluster.waitFor(resources.gpuPod, NS, 'survivor', ready, 'Ready');
    await first.stop();

    await cluster.patch(resources.gpuPod, NS, 'survivor', { spec: { paused: true } });
    const second = await startOperator(stack.plane(), stack.sim());
    try {
      await cluster.waitFor(
        resources.gpuPod,
        NS,
        'survivor',
        (obj) => obj?.status?.phase === 'PAUSED',
        'paused by the new process',
      );
      assert.equal(cloudPods('survivor').length, 1);
    } finally {
      await second.stop();
    }
  });

  test('with leader election only one of two operators acts, and the other takes over when it stops', async () => {
    const cluster = stack.cluster();
    const flags = ['--leader-elect', 'true', '--lease-namespace', NS];
    const a = await startOperator(stack.plane(), stack.sim(), { flags });
    const b = await startOperator(stack.plane(), stack.sim(), { flags });
    const operators = [a, b];
    const leads = (op: (typeof operators)[number]) =>
      op.logs.some((line) => line.includes('"msg":"controller started"'));
    try {
      for (let i = 0; i < 5; i++) await cluster.create(resources.gpuPod, NS, gpuPod(`elected-${i}`));
      for (let i = 0; i < 5; i++) await cluster.waitFor(resources.gpuPod, NS, `elected-${i}`, ready, 'Ready');
      assert.equal(operators.filter(leads).length, 1, 'exactly one operator started its controllers');
      for (let i = 0; i < 5; i++) assert.equal(cloudPods(`elected-${i}`).length, 1, 'one cloud pod each');

      const [leader, standby] = leads(a) ? [a, b] : [b, a];
      await leader.stop();
      await cluster.create(resources.gpuPod, NS, gpuPod('after-failover'));
      await cluster.waitFor(
        resources.gpuPod,
        NS,
        'after-failover',
        ready,
        'Ready under the new leader',
        60_000,
      );
      assert.ok(leads(standby), 'the standby took over');
      await poll(
        async () => cloudPods('after-failover').length,
        (n) => n === 1,
        'one cloud pod',
      );
    } finally {
      await Promise.all(operators.map((op) => op.stop()));
    }
  });
});
