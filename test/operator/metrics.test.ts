import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { API_KEY, isReady, manifests, resources, useOperator, useStack } from '../support/operator.ts';

const NS = 'observed';
const stack = useStack();

describe('the operator as Kubernetes and Prometheus see it', () => {
  const operator = useOperator(stack, [NS]);

  test('serves /healthz, /readyz and /metrics with controller-runtime and API client metrics, and no secret', async () => {
    await stack.cluster().create(resources.gpuPod, NS, manifests.gpuPod('measured'));
    await stack.cluster().waitFor(resources.gpuPod, NS, 'measured', isReady('Running'), 'Ready');
    assert.equal((await operator().fetchHealth('/healthz')).status, 200);
    assert.equal((await operator().fetchHealth('/readyz')).status, 200);
    const metrics = (await operator().fetchHealth('/metrics')).body;
    for (const name of [
      'controller_runtime_reconcile_total{controller="gpupod",result="success"}',
      'controller_runtime_reconcile_errors_total{controller="gpupod"}',
      'controller_runtime_reconcile_time_seconds_bucket{',
      'workqueue_depth{name="gpupod"}',
      'workqueue_adds_total{name="gpupod"}',
      'workqueue_retries_total{name="gpupod"}',
      'gpucloud_api_requests_total{operation="pods.create",code="10000",account="default"}',
      'gpucloud_api_request_duration_seconds_bucket{',
    ]) {
      assert.ok(metrics.includes(name), `${name} is exposed`);
    }
    assert.ok(!metrics.includes(API_KEY), 'the API key is in no metric');
  });
});
