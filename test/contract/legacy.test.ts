import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiCode } from '../../src/api/codes.ts';
import type { LegacyPodCreateRequest } from '../../src/api/schemas/index.ts';
import {
  collect,
  itExercisedEveryOperation,
  MISSING_ID,
  rejectsLocally,
  rejectsWithCode,
  useContract,
} from './harness.ts';

const env = useContract();

async function aVmOffer() {
  for (const gpu of await env.client.legacy.vms.types()) {
    for (const { region, types } of gpu.regions) {
      const type = types.find((item) => item.ondemandAvailable && item.gpuCount === 1);
      if (type !== undefined) return { region, vmTypeId: type.vmTypeId };
    }
  }
  assert.fail('the service offers no on-demand VM type');
}

async function newLegacyVm(nickName: string) {
  const { region, vmTypeId } = await aVmOffer();
  return env.client.legacy.vms.create({ vmTypeId, region, nickName, isSpot: false });
}

async function aPodRequest(podName: string): Promise<LegacyPodCreateRequest> {
  const { items } = await env.client.pods.searchGpus({ gpuCounts: [1], isSpot: false });
  const offer = items.find((item) => item.gpuCountOptions.some((option) => option.available));
  assert.ok(offer, 'an available single-GPU machine');
  return { podName, image: 'pytorch:2', gpuType: offer.gpuType, gpuCount: 1, region: offer.region };
}

describe('legacy v1 VMs against the simulator', () => {
  it('types: the same listing as v2', async () => {
    assert.deepEqual(await env.client.legacy.vms.types(), await env.client.vms.types());
  });

  it('create and get: the v2 VM under v1 names (nickname, isSpot as a flag)', async () => {
    const vm = await newLegacyVm('legacy-trainer');
    assert.match(vm.id, /^\d+$/);
    assert.equal(vm.nickname, 'legacy-trainer');
    assert.equal(vm.isSpot, false);
    assert.deepEqual(await env.client.legacy.vms.get(vm.id), vm);
    const v2 = await env.client.vms.get(vm.id);
    assert.equal(v2.name, 'legacy-trainer');
    assert.equal(v2.createdAt, vm.createdAt);
    env.step();
    assert.equal((await env.client.legacy.vms.get(vm.id)).status, 'RUNNING');
  });

  it('list pages with pageNumber and pageSize and filters by status', async () => {
    await newLegacyVm('l-a');
    await newLegacyVm('l-b');
    await newLegacyVm('l-c');
    const all = await collect(env.client.legacy.vms.listAll());
    assert.ok(all.length >= 3);
    const first = await env.client.legacy.vms.list({ pageNumber: 1, pageSize: 2 });
    assert.deepEqual(
      [first.pageNumber, first.pageSize, first.totalRow, first.totalPage],
      [1, 2, all.length, Math.ceil(all.length / 2)],
    );
    assert.deepEqual(await collect(env.client.legacy.vms.listAll({}, { pageSize: 2 })), all);
    const running = await env.client.legacy.vms.list({
      pageNumber: 1,
      pageSize: 100,
      search: { status: 'RUNNING' },
    });
    assert.ok(running.records.every((vm) => vm.status === 'RUNNING'));
  });

  it('terminate a running VM; the v2 view shows it terminating', async () => {
    const vm = await newLegacyVm('legacy-doomed');
    await rejectsWithCode(env.client.legacy.vms.terminate(vm.id), { code: ApiCode.VmStatusInvalid });
    env.step();
    await env.client.legacy.vms.terminate(vm.id);
    assert.equal((await env.client.vms.get(vm.id)).status, 'TERMINATING');
    await rejectsWithCode(env.restricted.legacy.vms.terminate(vm.id), {
      code: ApiCode.NoTerminatePermission,
    });
  });

  it('unknown or foreign VMs are 11000', async () => {
    const vm = await newLegacyVm('legacy-private');
    await rejectsWithCode(env.client.legacy.vms.get(MISSING_ID), { code: ApiCode.VmNotFound });
    await rejectsWithCode(env.client.legacy.vms.terminate(MISSING_ID), { code: ApiCode.VmNotFound });
    await rejectsWithCode(env.stranger.legacy.vms.get(vm.id), { code: ApiCode.VmNotFound });
    const theirs = await env.stranger.legacy.vms.list({ pageNumber: 1, pageSize: 100 });
    assert.ok(theirs.records.every((other) => other.id !== vm.id));
  });

  it('bad input is refused by the client and by the service (10001)', async () => {
    const { region, vmTypeId } = await aVmOffer();
    await rejectsLocally(
      env.client.legacy.vms.create({ vmTypeId, region, nickName: 'n'.repeat(256), isSpot: false }),
      'body.nickName',
      /1 to 255/,
    );
    await rejectsLocally(
      env.client.legacy.vms.list({ pageNumber: 0, pageSize: 10 }),
      'body.pageNumber',
      /1-based/,
    );
    const raw = await env.raw('POST', '/openapi/v1/vms/create', {
      body: { vmTypeId, region, nickName: 'x', isSpot: 2 },
    });
    assert.equal(raw.status, 400);
    assert.equal(raw.envelope.code, ApiCode.InvalidRequest);
  });
});

describe('legacy v1 pods against the simulator', () => {
  it('create answers the id; get shows the v1 view (podName, INITIALIZE, ISO times read as epoch ms)', async () => {
    const id = await env.client.legacy.pods.create(await aPodRequest('legacy-notebook'));
    assert.match(id, /^\d+$/);
    const pod = await env.client.legacy.pods.get(id);
    assert.equal(pod.id, id);
    assert.equal(pod.podName, 'legacy-notebook');
    assert.equal(pod.status, 'INITIALIZE');
    const v2 = await env.client.pods.get(id);
    assert.equal(v2.name, 'legacy-notebook');
    assert.equal(v2.status, 'INITIALIZING');
    assert.equal(pod.createdAt, v2.createdAt);
    // v1 sends prices as JSON numbers, so trailing zeros are not kept: compare amounts.
    assert.equal(Number(pod.singleCardPrice), Number(v2.singleCardPrice));
    env.step();
    assert.equal((await env.client.legacy.pods.get(id)).status, 'RUNNING');
  });

  it('list shows the organisation’s pods in the v1 view', async () => {
    const id = await env.client.legacy.pods.create(await aPodRequest('legacy-listed'));
    const pods = await env.client.legacy.pods.list();
    assert.ok(pods.some((pod) => pod.id === id && pod.podName === 'legacy-listed'));
    assert.ok((await env.stranger.legacy.pods.list()).every((pod) => pod.id !== id));
  });

  it('pause, resume and delete drive the same pod the v2 surface sees', async () => {
    const id = await env.client.legacy.pods.create(await aPodRequest('legacy-cycle'));
    await rejectsWithCode(env.client.legacy.pods.pause(id), { code: ApiCode.ResourceStatusInvalid });
    env.step();
    await env.client.legacy.pods.pause(id);
    env.step();
    assert.equal((await env.client.pods.get(id)).status, 'PAUSED');
    await env.client.legacy.pods.resume(id);
    env.step();
    assert.equal((await env.client.pods.get(id)).status, 'RUNNING');
    await env.client.legacy.pods.delete(id);
    env.step();
    assert.equal((await env.client.legacy.pods.get(id)).status, 'TERMINATED');
  });

  it('unknown or foreign pods are 13000', async () => {
    const id = await env.client.legacy.pods.create(await aPodRequest('legacy-private'));
    const notFound = { code: ApiCode.PodNotFound } as const;
    await rejectsWithCode(env.client.legacy.pods.get(MISSING_ID), notFound);
    await rejectsWithCode(env.client.legacy.pods.delete(MISSING_ID), notFound);
    await rejectsWithCode(env.stranger.legacy.pods.get(id), notFound);
    await rejectsWithCode(env.stranger.legacy.pods.pause(id), notFound);
    await rejectsWithCode(env.stranger.legacy.pods.resume(id), notFound);
  });

  it('bad input is refused by the client and by the service (10001); a missing key is 401', async () => {
    const request = await aPodRequest('legacy-bad');
    await rejectsLocally(
      env.client.legacy.pods.create({ ...request, gpuCount: 6 }),
      'body.gpuCount',
      /power of 2/,
    );
    await rejectsLocally(
      env.client.legacy.pods.create({ ...request, maxPrice: 1 }),
      'body.maxPrice',
      /isSpot/,
    );
    const raw = await env.raw('POST', '/openapi/v1/pods/create', { body: { ...request, podName: '' } });
    assert.equal(raw.status, 400);
    assert.equal(raw.envelope.code, ApiCode.InvalidRequest);
    const keyless = await env.raw('GET', '/openapi/v1/pods/list', { apiKey: null });
    assert.equal(keyless.status, 401);
    await rejectsWithCode(env.clientWithKey('not-a-key').legacy.vms.types(), {
      code: ApiCode.InvalidRequest,
      httpStatus: 401,
    });
  });
});

itExercisedEveryOperation(env, 'legacy');
