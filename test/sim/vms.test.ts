import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiCode } from '../../src/api/codes.ts';
import { useSimulator } from './helpers.ts';

const OWNER = 'vm-owner';
const NO_TERMINATE = 'vm-restricted';
const sim = useSimulator({
  apiKeys: [
    { key: OWNER, org: 'acme' },
    { key: NO_TERMINATE, org: 'acme', canTerminate: false },
  ],
});

interface VmData {
  id: number;
  name: string;
  status: string;
  isSpot: boolean;
  terminatedAt: number | null;
}

/** H100 × 1 (vmTypeId from the types listing) in us-east-1. */
async function h100(): Promise<number> {
  const types = await sim.ok<
    Array<{
      gpuType: string;
      regions: Array<{ region: string; types: Array<{ vmTypeId: number; gpuCount: number }> }>;
    }>
  >('GET', '/v2/vms/types', { key: OWNER });
  const entry = types.find((type) => type.gpuType === 'NVIDIA H100 80GB HBM3');
  const type = entry?.regions
    .find((region) => region.region === 'us-east-1')
    ?.types.find((item) => item.gpuCount === 1);
  assert.ok(type, 'H100 × 1 is offered in us-east-1');
  return type.vmTypeId;
}

async function newVm(name: string): Promise<VmData> {
  const body = { vmTypeId: await h100(), region: 'us-east-1', name, isSpot: false };
  return sim.ok<VmData>('POST', '/v2/vms', { key: OWNER, body });
}

const get = (id: number) => sim.ok<VmData>('GET', `/v2/vms/${id}`, { key: OWNER });

describe('VM state machine', () => {
  it('create → INITIALIZING → RUNNING; ids are JSON integers', async () => {
    const vm = await newVm('worker');
    assert.equal(typeof vm.id, 'number');
    assert.equal(vm.status, 'INITIALIZING');
    assert.equal(vm.terminatedAt, null);
    await sim.advance();
    assert.equal((await get(vm.id)).status, 'RUNNING');
  });

  it('terminate is refused with 11001 while INITIALIZING, TERMINATING and TERMINATED', async () => {
    const vm = await newVm('refused');
    const early = await sim.fails(ApiCode.VmStatusInvalid, 'DELETE', `/v2/vms/${vm.id}`, { key: OWNER });
    assert.match(early.body.message, /INITIALIZING/);
    await sim.advance();
    assert.equal(await sim.ok('DELETE', `/v2/vms/${vm.id}`, { key: OWNER }), true);
    assert.equal((await get(vm.id)).status, 'TERMINATING');
    await sim.fails(ApiCode.VmStatusInvalid, 'DELETE', `/v2/vms/${vm.id}`, { key: OWNER });
    await sim.advance();
    const terminated = await get(vm.id);
    assert.equal(terminated.status, 'TERMINATED');
    assert.equal(typeof terminated.terminatedAt, 'number');
    await sim.fails(ApiCode.VmStatusInvalid, 'DELETE', `/openapi/v1/vms/${vm.id}/terminate`, { key: OWNER });
  });

  it('a key without terminate permission gets 11002; granting it at run time lets it terminate', async () => {
    const vm = await newVm('guarded');
    await sim.advance();
    const refused = await sim.fails(ApiCode.NoTerminatePermission, 'DELETE', `/v2/vms/${vm.id}`, {
      key: NO_TERMINATE,
    });
    assert.match(refused.body.message, /permission/);
    assert.equal((await get(vm.id)).status, 'RUNNING');
    (await sim.running()).faults.setTerminatePermission(NO_TERMINATE, true);
    await sim.ok('DELETE', `/v2/vms/${vm.id}`, { key: NO_TERMINATE });
    (await sim.running()).faults.setTerminatePermission(NO_TERMINATE, false);
  });

  it('rename by PATCH; an unknown VM answers 11000 on get, update and terminate', async () => {
    const vm = await newVm('old-name');
    const renamed = await sim.ok<VmData>('PATCH', `/v2/vms/${vm.id}`, {
      key: OWNER,
      body: { name: 'new-name' },
    });
    assert.equal(renamed.name, 'new-name');
    assert.equal((await get(vm.id)).name, 'new-name');
    await sim.fails(ApiCode.VmNotFound, 'GET', '/v2/vms/1', { key: OWNER });
    await sim.fails(ApiCode.VmNotFound, 'PATCH', '/v2/vms/1', { key: OWNER, body: { name: 'x' } });
    await sim.fails(ApiCode.VmNotFound, 'DELETE', '/v2/vms/1', { key: OWNER });
    await sim.fails(ApiCode.VmNotFound, 'GET', '/openapi/v1/vms/1', { key: OWNER });
  });

  it('an unknown vmTypeId, or a region that does not offer it, is 10001 naming the field', async () => {
    const bad = await sim.fails(ApiCode.InvalidRequest, 'POST', '/v2/vms', {
      key: OWNER,
      body: { vmTypeId: 99_999, region: 'us-east-1', name: 'x', isSpot: false },
    });
    assert.equal(bad.status, 400);
    assert.match(bad.body.message, /vmTypeId/);
    const elsewhere = await sim.fails(ApiCode.InvalidRequest, 'POST', '/v2/vms', {
      key: OWNER,
      body: { vmTypeId: await h100(), region: 'ap-southeast-1', name: 'x', isSpot: false },
    });
    assert.match(elsewhere.body.message, /region/);
  });
});

describe('VM lists', () => {
  it('v2 pages with page and size (capped at 100) and filters by status', async () => {
    for (let i = 0; i < 3; i++) await newVm(`paged-${i}`);
    const all = await sim.ok<{ items: VmData[]; total: number }>('GET', '/v2/vms?size=100', { key: OWNER });
    const first = await sim.ok<{ items: VmData[]; page: number; size: number; total: number; pages: number }>(
      'GET',
      '/v2/vms?page=1&size=2',
      { key: OWNER },
    );
    assert.deepEqual([first.page, first.size, first.total], [1, 2, all.total]);
    assert.equal(first.pages, Math.ceil(all.total / 2));
    assert.equal(first.items.length, 2);
    const second = await sim.ok<{ items: VmData[] }>('GET', '/v2/vms?page=2&size=2', { key: OWNER });
    assert.deepEqual(
      [...first.items, ...second.items].map((vm) => vm.id),
      all.items.slice(0, 4).map((vm) => vm.id),
    );
    const tooBig = await sim.fails(ApiCode.InvalidRequest, 'GET', '/v2/vms?size=101', { key: OWNER });
    assert.match(tooBig.body.message, /query\.size/);
    const initializing = await sim.ok<{ items: VmData[] }>('GET', '/v2/vms?status=INITIALIZING&size=100', {
      key: OWNER,
    });
    assert.ok(initializing.items.length >= 3);
    assert.ok(initializing.items.every((vm) => vm.status === 'INITIALIZING'));
  });

  it('v1 shows the same VMs: nickname, integer isSpot, records with page counters', async () => {
    const created = await sim.ok<{ id: number; nickname: string; isSpot: number }>(
      'POST',
      '/openapi/v1/vms/create',
      {
        key: OWNER,
        body: { vmTypeId: await h100(), region: 'us-east-1', nickName: 'legacy-vm', isSpot: 1 },
      },
    );
    assert.equal(created.nickname, 'legacy-vm');
    assert.equal(created.isSpot, 1);
    assert.equal((await get(created.id)).isSpot, true);
    const page = await sim.ok<{
      records: Array<{ id: number }>;
      pageNumber: number;
      pageSize: number;
      totalRow: number;
    }>('POST', '/openapi/v1/vms/list', { key: OWNER, body: { pageNumber: 1, pageSize: 100 } });
    assert.ok(page.records.some((vm) => vm.id === created.id));
    assert.equal(page.totalRow, page.records.length);
  });
});
