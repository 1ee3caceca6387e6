import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { z } from 'zod';
import {
  condition,
  manifests,
  poll,
  type RunningOperator,
  resources,
  startOperator,
  useStack,
} from '../support/operator.ts';

// A failure retrying cannot fix is an error in the controller's metrics, counted apart as terminal, and
// the resource is not reconciled again until it changes.
const NS = 'terminal';
const stack = useStack();
let operator: RunningOperator;

const listening = z.object({ msg: z.literal('health and metrics server listening'), port: z.number() });

async function metricsText(): Promise<string> {
  const port = operator.logs
    .map((text) => listening.safeParse(JSON.parse(text)))
    .find((parsed) => parsed.success)?.data?.port;
  assert.ok(port, 'the health server is listening');
  return (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
}

function sample(text: string, series: string): number {
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${series} `));
  return Number(line?.split(' ')[1] ?? Number.NaN);
}

describe('a terminal failure', () => {
  before(async () => {
    await stack.cluster().ensureNamespace(NS);
    operator = await startOperator(stack.plane(), stack.sim());
  });
  after(() => operator.stop());

  test('counts as an error and a terminal error, and is not retried until the resource changes', async () => {
    const cluster = stack.cluster();
    await cluster.create(
      resources.gpuPod,
      NS,
      manifests.gpuPod('imaginary', { gpuType: 'NVIDIA Imaginary 9000' }),
    );
    const refused = await cluster.waitFor(
      resources.gpuPod,
      NS,
      'imaginary',
      (obj) => condition(obj, 'Synced')?.status === 'False',
      'Synced=False',
    );
    assert.equal(condition(refused, 'Synced')?.reason, 'CloudRejected');
    const terminal = 'controller_runtime_terminal_reconcile_errors_total{controller="gpupod"}';
    const errors = 'controller_runtime_reconcile_errors_total{controller="gpupod"}';
    const first = await poll(metricsText, (text) => sample(text, terminal) === 1, 'one terminal error');
    assert.ok(sample(first, errors) >= 1, 'the terminal error is an error too');
    assert.ok(sample(first, 'controller_runtime_reconcile_total{controller="gpupod",result="error"}') >= 1);
    const creates = () => stack.sim().calls.snapshot().byOperation['pods.create'] ?? 0;
    const sent = creates();
    // Two poll intervals and more: a retry would have reached the cloud by then.
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    assert.equal(creates(), sent, 'no create retried');
    assert.equal(sample(await metricsText(), terminal), 1, 'not reconciled again');
    const touched = { metadata: { annotations: { 'example.com/touched': 'yes' } } };
    await cluster.patch(resources.gpuPod, NS, 'imaginary', touched);
    await poll(metricsText, (text) => sample(text, terminal) === 2, 'the changed resource tried once more');
  });
});
