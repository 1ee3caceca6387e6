import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiCode } from '../../src/api/codes.ts';
import type { VmCreateRequest, VmTypeItem } from '../../src/api/schemas/index.ts';
import {
  collect,
  itExercisedEveryOperation,
  MISSING_ID,
  RETENTION_MS,
  rejectsLocally,
  rejectsWithCode,
  STEP_MS,
  useContract,
} from './harness.ts';

const env = useContract();

/** An on-demand VM type the service offers, with the region to create it in. */
async function anOffer(): Promise<{ region: string; type: VmTypeItem }> {
  for (const gpu of await env.client.vms.types()) {
    for (const { region, types } of gpu.regions) {
      const type = types.find(
        (item) => item.supportOnDemand && item.ondemandAvailable && item.gpuCount === 1,
      );
      if (type !== undefined) return { region, type };
    }
  }
  assert.fail('the service offers no on-demand VM type');
}

async function newVm(name: string, overrides: Partial<VmCreateRequest> = {}) {
  const { region, type } = await anOffer();
  return env.client.vms.create({ vmTypeId: type.vmTypeId, region, name, isSpot: false, ...overrides });
}

/** A VM that has reached RUNNING. */
async function runningVm(name: string) {
  const vm = await newVm(name);
  env.step();
  assert.equal((await env.client.vms.get(vm.id)).status, 'RUNNING');
  return vm;
}

describe('v2 VMs against the simulator', () => {
  it('types: GPU types by region, each type with its id, prices and availability', async () => {
    const types = await env.client.vms.types();
    assert.ok(types.length > 0);
    const item = types[0]?.regions[0]?.types[0];
    assert.ok(item, 'a GPU type with a region and a type item');
    assert.equal(typeof item.vmTypeId, 'number');
    assert.match(item.pricePerHour, /^\d+(\.\d+)?$/);
    assert.equal(item.spotPricePerHour !== undefined, item.supportSpot);
  });

  it('create answers the new VM INITIALIZING; one step later it is RUNNING', async () => {
    const vm = await newVm('trainer');
    assert.match(vm.id, /^\d+$/);
    assert.equal(vm.name, 'trainer');
    assert.equal(vm.status, 'INITIALIZING');
    assert.equal(vm.isSpot, false);
    assert.equal(vm.terminatedAt, null);
    assert.deepEqual(await env.client.vms.get(vm.id), vm);
    env.step();
    const running = await env.client.vms.get(vm.id);
    assert.equal(running.status, 'RUNNING');
    assert.ok(running.updatedAt >= vm.createdAt + STEP_MS);
  });

  it('update renames the VM', async () => {
    const vm = await newVm('before');
    const renamed = await env.client.vms.update(vm.id, { name: 'after' });
    assert.equal(renamed.name, 'after');
    assert.equal((await env.client.vms.get(vm.id)).name, 'after');
  });

  it('list pages through the organisation’s VMs and filters by status', async () => {
    await newVm('page-a');
    await newVm('page-b');
    await newVm('page-c');
    const all = await collect(env.client.vms.listAll());
    const total = all.length;
    assert.ok(total >= 3);
    assert.equal(new Set(all.map((vm) => vm.id)).size, total, 'no VM is listed twice');

    const first = await env.client.vms.list({ page: 1, size: 2 });
    assert.deepEqual([first.page, first.size, first.total, first.pages], [1, 2, total, Math.ceil(total / 2)]);
    assert.equal(first.items.length, 2);
    const last = await env.client.vms.list({ page: first.pages, size: 2 });
    assert.equal(last.items.length, total - 2 * (first.pages - 1));
    assert.deepEqual(await collect(env.client.vms.listAll({}, { pageSize: 2 })), all);

    const initializing = await env.client.vms.list({ status: 'INITIALIZING', size: 100 });
    assert.ok(initializing.items.length >= 3);
    assert.ok(initializing.items.every((vm) => vm.status === 'INITIALIZING'));
  });

  it('list defaults to page 1 of 10', async () => {
    const page = await env.client.vms.list();
    assert.equal(page.page, 1);
    assert.equal(page.size, 10);
  });

  it('terminate: TERMINATING, then TERMINATED, then gone after the retention period', async () => {
    const vm = await runningVm('short-lived');
    assert.equal(await env.client.vms.terminate(vm.id), true);
    assert.equal((await env.client.vms.get(vm.id)).status, 'TERMINATING');
    env.step();
    const terminated = await env.client.vms.get(vm.id);
    assert.equal(terminated.status, 'TERMINATED');
    assert.equal(typeof terminated.terminatedAt, 'number');
    env.sim.clock.advance(RETENTION_MS);
    await rejectsWithCode(env.client.vms.get(vm.id), { code: ApiCode.VmNotFound, kind: 'notFound' });
  });

  it('terminate is refused with 11001 while INITIALIZING, TERMINATING or TERMINATED', async () => {
    const vm = await newVm('not-yet');
    const refused = { code: ApiCode.VmStatusInvalid, kind: 'conflict' } as const;
    await rejectsWithCode(env.client.vms.terminate(vm.id), refused);
    env.step();
    await env.client.vms.terminate(vm.id);
    await rejectsWithCode(env.client.vms.terminate(vm.id), refused);
    env.step();
    await rejectsWithCode(env.client.vms.terminate(vm.id), refused);
  });

  it('a key without terminate permission gets 11002 and the VM keeps running', async () => {
    const vm = await runningVm('protected');
    await rejectsWithCode(env.restricted.vms.terminate(vm.id), {
      code: ApiCode.NoTerminatePermission,
      kind: 'terminal',
    });
    assert.equal((await env.client.vms.get(vm.id)).status, 'RUNNING');
  });

  it('an unknown id is 11000 for get, update and terminate', async () => {
    const notFound = { code: ApiCode.VmNotFound, kind: 'notFound' } as const;
    await rejectsWithCode(env.client.vms.get(MISSING_ID), notFound);
    await rejectsWithCode(env.client.vms.update(MISSING_ID, { name: 'x' }), notFound);
    await rejectsWithCode(env.client.vms.terminate(MISSING_ID), notFound);
  });

  it('another organisation neither sees nor touches the VM; the same organisation does', async () => {
    const vm = await runningVm('private');
    const notFound = { code: ApiCode.VmNotFound } as const;
    await rejectsWithCode(env.stranger.vms.get(vm.id), notFound);
    await rejectsWithCode(env.stranger.vms.update(vm.id, { name: 'stolen' }), notFound);
    await rejectsWithCode(env.stranger.vms.terminate(vm.id), notFound);
    const strangers = await collect(env.stranger.vms.listAll());
    assert.ok(strangers.every((other) => other.id !== vm.id));
    assert.equal((await env.restricted.vms.get(vm.id)).name, 'private');
    assert.equal((await env.client.vms.get(vm.id)).status, 'RUNNING');
  });

  it('bad input is refused by the client before sending, and by the service (400, 10001)', async () => {
    const { region, type } = await anOffer();
    const before = env.callsOf('vms.create');
    await rejectsLocally(
      env.client.vms.create({ vmTypeId: type.vmTypeId, region, name: '', isSpot: false }),
      'body.name',
      /name must not be empty/,
    );
    await rejectsLocally(env.client.vms.update('1', { name: 'n'.repeat(256) }), 'body.name', /1 to 255/);
    await rejectsLocally(env.client.vms.list({ size: 101 }), 'query.size', /at most 100/);
    assert.equal(env.callsOf('vms.create'), before, 'nothing was sent');

    const raw = await env.raw('POST', '/v2/vms', {
      body: { vmTypeId: type.vmTypeId, region, name: '', isSpot: false },
    });
    assert.equal(raw.status, 400);
    assert.equal(raw.envelope.code, ApiCode.InvalidRequest);
    assert.match(raw.envelope.message ?? '', /body\.name/);
    const paged = await env.raw('GET', '/v2/vms?size=101');
    assert.equal(paged.envelope.code, ApiCode.InvalidRequest);
  });

  it('a VM type or region the service does not offer is 10001 from the service', async () => {
    const { region } = await anOffer();
    await rejectsWithCode(env.client.vms.create({ vmTypeId: 987654, region, name: 'x', isSpot: false }), {
      code: ApiCode.InvalidRequest,
      httpStatus: 400,
      message: /vmTypeId/,
    });
  });

  it('every v2 VM operation requires a known API key (HTTP 401)', async () => {
    const unknown = env.clientWithKey('not-a-key');
    await rejectsWithCode(unknown.vms.list(), { code: ApiCode.InvalidRequest, httpStatus: 401 });
    await rejectsWithCode(unknown.vms.types(), { code: ApiCode.InvalidRequest, httpStatus: 401 });
    const keyless = await env.raw('GET', '/v2/vms', { apiKey: null });
    assert.equal(keyless.status, 401);
  });

  itExercisedEveryOperation(env, 'vms');
});
