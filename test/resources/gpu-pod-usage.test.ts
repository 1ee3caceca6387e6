import assert from 'node:assert/strict';
import { test } from 'node:test';
import { gpuPodUsage } from '../../src/resources/gpu-pod/usage.ts';

const running = (spec: Record<string, unknown>) => ({
  metadata: { namespace: 'ns', name: 'p' },
  spec: { gpuType: 'NVIDIA L40S', gpuCount: 2, ...spec },
  status: { phase: 'RUNNING', prices: { singleCard: '0.5' }, estimatedCost: '3' },
});

test('a running GPU pod counts its GPUs and pays its card price for each', () => {
  const usage = gpuPodUsage(running({}));
  assert.equal(usage.runningGpus, 2);
  assert.equal(usage.dollarsPerHour, 1);
  assert.equal(usage.dollarsSoFar, 3);
});

test('a CPU pod holds no GPUs in the fleet gauges', () => {
  assert.equal(gpuPodUsage(running({ resourceType: 'CPU', gpuType: 'CPU' })).runningGpus, 0);
});

test('a paused pod holds and pays nothing per hour', () => {
  const paused = { ...running({}), status: { phase: 'PAUSED', prices: { singleCard: '0.5' } } };
  assert.deepEqual([gpuPodUsage(paused).runningGpus, gpuPodUsage(paused).dollarsPerHour], [0, 0]);
});

test('a placed pod counts under the GPU type it runs on, which its status says', () => {
  const placed = {
    metadata: { namespace: 'ns', name: 'p' },
    spec: { gpuCount: 1, placement: { gpuTypes: ['NVIDIA L40S', 'NVIDIA A100-SXM4-80GB'] } },
    status: { phase: 'RUNNING', gpuType: 'NVIDIA A100-SXM4-80GB', prices: { singleCard: '1.89' } },
  };
  const usage = gpuPodUsage(placed);
  assert.deepEqual(
    [usage.gpuType, usage.runningGpus, usage.dollarsPerHour],
    ['NVIDIA A100-SXM4-80GB', 1, 1.89],
  );
});
