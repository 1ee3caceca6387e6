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
