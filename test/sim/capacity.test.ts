import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiCode } from '../../src/api/codes.ts';
import { GPU, podRequest, REGION, useSimulator } from './helpers.ts';

// Four L40S GPUs in us-east-1: room for two 2-GPU pods.
const sim = useSimulator({ capacity: { pools: [{ region: REGION, gpuType: GPU, gpus: 4 }] } });

const A100 = 'NVIDIA A100-SXM4-80GB';
const A100_REGION = 'ap-southeast-1';
const a100Pod = (name: string, extra: Record<string, unknown> = {}) =>
  podRequest(name, { gpuType: A100, regions: [A100_REGION], ...extra });

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

/** Which GPU counts of A100 in its region have room, spot or on-demand. */
async function a100Available(isSpot: boolean): Promise<boolean[] | undefined> {
  const result = await sim.ok<{ items: Array<{ gpuCountOptions: Array<{ available: boolean }> }> }>(
    'POST',
    '/v2/gpu/list',
    { body: { gpuTypes: [A100], regions: [A100_REGION], isSpot, includeUnavailable: true } },
  );
  return result.items[0]?.gpuCountOptions.map((option) => option.available);
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

  it('limits spot apart from on-demand, and over HTTP too', async () => {
    const simulator = await sim.running();
    simulator.capacity.setTotal(A100_REGION, A100, 4);
    assert.equal(
      (await sim.admin('PUT', '/capacity', { region: A100_REGION, gpuType: A100, gpus: 4, spotGpus: 1 }))
        .status,
      200,
    );
    const spotOffer = () => a100Available(true);
    assert.deepEqual(await spotOffer(), [true, false, false, false]);
    await sim.fails(ApiCode.NoCapacity, 'POST', '/v2/pods', {
      body: a100Pod('spot2', { gpuCount: 2, isSpot: true }),
    });
    const spot = await sim.ok<{ id: string }>('POST', '/v2/pods', {
      body: a100Pod('spot1', { isSpot: true }),
    });
    assert.deepEqual(await spotOffer(), [false, false, false, false]);
    await sim.fails(ApiCode.NoCapacity, 'POST', '/v2/pods', { body: a100Pod('spot3', { isSpot: true }) });
    // On-demand still has the pool's other three GPUs.
    assert.deepEqual(await a100Available(false), [true, true, false, false]);
    const onDemand = await sim.ok<{ id: string }>('POST', '/v2/pods', {
      body: a100Pod('od', { gpuCount: 2 }),
    });
    await sim.advance();
    assert.ok(simulator.faults.preempt(spot.id));
    assert.deepEqual(
      await spotOffer(),
      [true, false, false, false],
      'a preempted spot pod gives its GPU back',
    );
    await sim.admin('PUT', '/capacity', { region: A100_REGION, gpuType: A100, gpus: 4, spotGpus: null });
    assert.deepEqual(
      await spotOffer(),
      [true, true, false, false],
      'unlimited spot: the 2 GPUs on-demand leaves',
    );
    assert.ok(onDemand.id);
  });

  it('quotes changed prices; a pod keeps the price it was created at', async () => {
    const simulator = await sim.running();
    simulator.capacity.setTotal(A100_REGION, A100, 4);
    const quoted = async (isSpot: boolean) => {
      const result = await sim.ok<{
        items: Array<{ gpuCountOptions: Array<{ price: { pricePerGpuPerHour: string } }> }>;
      }>('POST', '/v2/gpu/list', {
        body: { gpuTypes: [A100], regions: [A100_REGION], isSpot, includeUnavailable: true },
      });
      return result.items.map((item) => item.gpuCountOptions[0]?.price.pricePerGpuPerHour);
    };
    const before = await sim.ok<{ id: string; singleCardPrice: string }>('POST', '/v2/pods', {
      body: a100Pod('before'),
    });
    assert.equal(before.singleCardPrice, '1.8900');
    assert.equal(
      (await sim.admin('PUT', '/prices', { gpuType: A100, onDemand: 1.25, spot: null })).status,
      200,
    );
    assert.equal((await sim.admin('PUT', '/prices', { gpuType: A100, onDemand: -1 })).status, 400);
    assert.deepEqual(await quoted(false), ['1.2500']);
    assert.deepEqual(await quoted(true), [], 'a withdrawn spot offer is not listed');
    await sim.fails(ApiCode.InvalidRequest, 'POST', '/v2/pods', {
      body: a100Pod('spot', { isSpot: true }),
    });
    const after = await sim.ok<{ singleCardPrice: string }>('POST', '/v2/pods', {
      body: a100Pod('after'),
    });
    assert.equal(after.singleCardPrice, '1.2500');
    const again = await sim.ok<{ singleCardPrice: string }>('GET', `/v2/pods/${before.id}`);
    assert.equal(again.singleCardPrice, '1.8900');
    assert.throws(() => simulator.market.set(A100, { onDemand: -1 }), /positive price/);
  });
});
