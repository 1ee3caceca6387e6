import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, describe, test } from 'node:test';
import { z } from 'zod';
import { type RunningControllerManager, startControllerManager } from '../../src/local/controller-manager.ts';
import {
  isReady,
  manifests,
  type RunningOperator,
  resources,
  startOperator,
  useStack,
} from '../support/operator.ts';
import { poll } from '../support/until.ts';

// A real HPA controller (kube-controller-manager, built from Go modules with the control plane) scaling a
// ServerlessEndpoint through its scale subresource, and the operator carrying that to the cloud.
const NS = 'hpa';
const stack = useStack();
let operator: RunningOperator;
let controllerManager: RunningControllerManager;

const hpaPath = `/apis/autoscaling/v2/namespaces/${NS}/horizontalpodautoscalers`;
const hpaSchema = z.looseObject({
  status: z
    .looseObject({
      conditions: z
        .array(z.looseObject({ type: z.string(), status: z.string(), reason: z.string() }))
        .optional(),
    })
    .optional(),
});

function hpa(name: string, target: string, minReplicas: number, maxReplicas: number) {
  return {
    apiVersion: 'autoscaling/v2',
    kind: 'HorizontalPodAutoscaler',
    metadata: { name },
    spec: {
      scaleTargetRef: { apiVersion: 'gpucloud.io/v1alpha1', kind: 'ServerlessEndpoint', name: target },
      minReplicas,
      maxReplicas,
      // As KEDA's Prometheus scaler feeds it: an External metric, for which the HPA still wants a selector.
      metrics: [
        {
          type: 'External',
          external: {
            metric: { name: 'gpucloud_endpoint_tasks', selector: { matchLabels: { endpoint: target } } },
            target: { type: 'AverageValue', averageValue: '2' },
          },
        },
      ],
    },
  };
}

const workersInCloud = (name: string) =>
  stack
    .sim()
    .state.snapshot()
    .endpoints.find((endpoint) => endpoint.name === name)?.totalWorkers;

/** A Ready endpoint with `workers`, and an HPA on it with the given bounds. */
async function scaledByHpa(name: string, workers: number, minReplicas: number, maxReplicas: number) {
  const cluster = stack.cluster();
  await cluster.create(resources.serverlessEndpoint, NS, manifests.serverlessEndpoint(name, { workers }));
  await cluster.waitFor(resources.serverlessEndpoint, NS, name, isReady(), 'Ready');
  await cluster.client.request(z.unknown(), {
    method: 'POST',
    path: hpaPath,
    body: hpa(name, name, minReplicas, maxReplicas),
  });
}

describe('HPA on a ServerlessEndpoint', () => {
  before(async () => {
    await stack.cluster().ensureNamespace(NS);
    operator = await startOperator(stack.plane(), stack.sim());
    controllerManager = await startControllerManager(stack.plane(), {
      controllers: ['horizontal-pod-autoscaler-controller'],
      flags: ['--horizontal-pod-autoscaler-sync-period=1s'],
    });
  });
  after(async () => {
    await controllerManager?.stop();
    await operator?.stop();
  });

  test('an HPA with minReplicas above the workers scales the endpoint, and the cloud follows', async () => {
    await scaledByHpa('lifted', 1, 3, 5);
    await stack
      .cluster()
      .waitFor(
        resources.serverlessEndpoint,
        NS,
        'lifted',
        (obj) => obj?.spec?.workers === 3,
        'spec.workers set to 3 by the HPA',
        60_000,
      );
    await poll(
      async () => workersInCloud('lifted'),
      (workers) => workers === 3,
      '3 workers in the cloud',
      30_000,
    );
  });

  test('an HPA on an External metric finds the selector: no SelectorRequired, no InvalidSelector', async () => {
    await scaledByHpa('metered', 2, 1, 4);
    const read = () =>
      stack.cluster().client.request(hpaSchema, { method: 'GET', path: `${hpaPath}/metered` });
    const active = await poll(
      async () => (await read()).status?.conditions?.find((condition) => condition.type === 'ScalingActive'),
      (condition) => condition !== undefined,
      'the HPA to judge its metric',
      60_000,
    );
    // No external metrics API runs here, so the metric itself cannot be read: the HPA got past the selector.
    assert.notEqual(active?.reason, 'SelectorRequired');
    assert.notEqual(active?.reason, 'InvalidSelector');
    assert.equal(active?.reason, 'FailedGetExternalMetric');
    const log = await readFile(controllerManager.logPath, 'utf8');
    assert.doesNotMatch(log, /selector is required|couldn't convert selector/);
  });
});
