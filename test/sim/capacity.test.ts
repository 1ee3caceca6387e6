import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiCode } from '../../src/api/codes.ts';
import { GPU, podRequest, REGION, useSimulator } from './helpers.ts';

// Four L40S GPUs in us-east-1: room for two 2-GPU pods.
const sim = useSimulator({ capacity: { pools: [{ region: REGION, gpuType: GPU, gpus: 4 }] } });

const twoGpus = (name: string) => podRequest(name, { gpuCount: 2 });

async function l40sOffer(): Promise<{ available: boolean[]; status: string }> {
  const result = await sim.ok<{
    items: Array<{ status: string; gpuCountOptions: Array<{ available: boolean }> }>;
  }>('POST', '/v2/gpu/list', {
    body: { gpuTypes: [GPU], regions: [REGION], isSpot: false, includeUnavailable: true },
  });
  const item = result.items[0];
  assert.ok(item && result.items.length === 1);
  return { status: item.status, available: item.gpuCountOptions.map((option) => option.available) };
}

describe('capacity', () => {
  it('is exhausted with retryable 12002, and returns when pods terminate or pause', async () => {
    const a = await sim.ok<{ id: string }>('POST', '/v2/pods', { body: twoGpus('a') });
    const b = await sim.ok<{ id: string }>('POST', '/v2/pods', { body: twoGpus('b') });
    assert.deepEqual(await l40sOffer(), { status: 'UNAVAILABLE', available: [false, false, false, false] });
    const refused = await sim.fails(ApiCode.NoCapacity, 'POST', '/v2/pods', { body: twoGpus('c') });
    assert.match(refused.body.message, /capacity/);
    await sim.fails(ApiCode.NoCapacity, 'POST', '/v2/serverless', {
      body: { name: 'ep', image: 'i', resources: [{ region: REGION, gpuType: GPU, gpuCount: 1 }] },
    });

    await sim.advance();
    await sim.ok('DELETE', `/v2/pods/${a.id}`);
    await sim.fails(ApiCode.NoCapacity, 'POST', '/v2/pods', { body: twoGpus('c') });
    await sim.advance();
    assert.deepEqual((await l40sOffer()).available, [true, true, false, false]);
    const c = await sim.ok<{ id: string }>('POST', '/v2/pods', { body: twoGpus('c') });

    // A paused pod holds no GPUs, so resuming it can find them taken.
    await sim.ok('POST', `/v2/pods/${b.id}/pause`);
    await sim.advance();
    const d = await sim.ok<{ id: string }>('POST', '/v2/pods', { body: twoGpus('d') });
    await sim.fails(ApiCode.NoCapacity, 'POST', `/v2/pods/${b.id}/resume`);
    await sim.ok('DELETE', `/v2/pods/${d.id}`);
    await sim.advance();
    await sim.ok('POST', `/v2/pods/${b.id}/resume`);
    assert.ok(c.id);
  });

  it('VM types report availability; terminated VMs and failed pods give capacity back', async () => {
    const simulator = await sim.running();
    simulator.capacity.setTotal('eu-west-1', 'NVIDIA RTX A6000', 1);
    const offer = async () => {
      const types = await sim.ok<
        Array<{
          gpuType: string;
          regions: Array<{ types: Array<{ vmTypeId: number; ondemandAvailable: boolean }> }>;
        }>
      >('GET', '/v2/vms/types');
      const item = types.find((type) => type.gpuType === 'NVIDIA RTX A6000')?.regions[0]?.types[0];
      assert.ok(item);
      return item;
    };
    const { vmTypeId } = await offer();
    const vm = await sim.ok<{ id: number }>('POST', '/v2/vms', {
      body: { vmTypeId, region: 'eu-west-1', name: 'only', isSpot: false },
    });
    assert.equal((await offer()).ondemandAvailable, false);
    await sim.fails(ApiCode.NoCapacity, 'POST', '/v2/vms', {
      body: { vmTypeId, region: 'eu-west-1', name: 'more', isSpot: false },
    });
    await sim.advance();
    await sim.ok('DELETE', `/v2/vms/${vm.id}`);
    await sim.advance();
    assert.equal((await offer()).ondemandAvailable, true);

    const pod = await sim.ok<{ id: string }>('POST', '/v2/pods', {
      body: podRequest('a6000', { gpuType: 'NVIDIA RTX A6000', regions: ['eu-west-1'] }),
    });
    await sim.advance();
    assert.equal(simulator.faults.preempt(pod.id), false, 'an on-demand pod cannot be preempted');
    const pool = () => simulator.capacity.describe().find((p) => p.gpuType === 'NVIDIA RTX A6000');
    assert.equal(pool()?.used, 1);
    assert.ok(simulator.faults.failPod(pod.id, 'FAILED'));
    assert.equal(pool()?.used, 0, 'a failed pod holds no GPUs');
  });
});
