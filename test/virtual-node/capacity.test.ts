import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { GpuSpec } from '../../src/api/schemas/gpus.ts';
import { GPU_RESOURCE, nodeCapacity } from '../../src/virtual-node/capacity.ts';

/** A GPU offer with only what capacity reads; the rest is of no account here. */
function offer(
  gpuType: string,
  region: string,
  available: number[],
  perGpu = { vcpu: 8, ram: 32, disk: 50 },
) {
  return {
    gpuType,
    region,
    status: 'AVAILABLE',
    availableGpuCounts: available,
    vcpuPerGpu: perGpu.vcpu,
    ramPerGpuInGb: perGpu.ram,
    localDiskPerGpuInGb: perGpu.disk,
  } as GpuSpec;
}

const OFFERS = [
  offer('NVIDIA L40S', 'eu-1', [1, 2, 4]),
  offer('NVIDIA L40S', 'us-2', [1, 2]),
  offer('NVIDIA H100', 'us-2', [8], { vcpu: 16, ram: 128, disk: 200 }),
  offer('NVIDIA A10', 'eu-1', []),
];

describe('virtual node capacity', () => {
  test('maxLiveGpus is the GPU capacity when the guardrails set it, whatever room the cloud has', () => {
    const { resources } = nodeCapacity({ maxLiveGpus: 16, maxPods: 110 }, OFFERS);
    assert.equal(resources[GPU_RESOURCE], '16');
  });

  test('without maxLiveGpus, the GPUs are the room the allowed offers have now, each pool its largest count', () => {
    assert.equal(nodeCapacity({ maxPods: 110 }, OFFERS).resources[GPU_RESOURCE], String(4 + 2 + 8));
    const l40s = nodeCapacity({ maxPods: 110, gpuTypes: new Set(['NVIDIA L40S']) }, OFFERS);
    assert.equal(l40s.resources[GPU_RESOURCE], String(4 + 2));
  });

  test('an account no offer fits has no GPUs, however high its limit', () => {
    const none = nodeCapacity({ maxLiveGpus: 16, maxPods: 110, gpuTypes: new Set(['NVIDIA B200']) }, OFFERS);
    assert.equal(none.resources[GPU_RESOURCE], '0');
    assert.equal(none.resources.cpu, '0');
    assert.deepEqual(none.gpuTypes, []);
    assert.equal(nodeCapacity({ maxLiveGpus: 16, maxPods: 110 }, []).resources[GPU_RESOURCE], '0');
  });

  test('cpu, memory and storage follow the GPUs at the most generous allowed per-GPU share; pods is maxPods', () => {
    const { resources } = nodeCapacity({ maxLiveGpus: 2, maxPods: 7 }, OFFERS);
    assert.deepEqual(resources, {
      [GPU_RESOURCE]: '2',
      cpu: '32',
      memory: '256G',
      'ephemeral-storage': '400G',
      pods: '7',
    });
    const small = nodeCapacity({ maxLiveGpus: 2, maxPods: 7, gpuTypes: new Set(['NVIDIA L40S']) }, OFFERS);
    assert.equal(small.resources.cpu, '16');
  });

  test('the types and regions it can place are those of the allowed offers, each once, sorted', () => {
    const all = nodeCapacity({ maxPods: 110 }, OFFERS);
    assert.deepEqual(all.gpuTypes, ['NVIDIA A10', 'NVIDIA H100', 'NVIDIA L40S']);
    assert.deepEqual(all.regions, ['eu-1', 'us-2']);
    const h100 = nodeCapacity({ maxPods: 110, gpuTypes: new Set(['NVIDIA H100']) }, OFFERS);
    assert.deepEqual(h100.regions, ['us-2']);
  });
});
