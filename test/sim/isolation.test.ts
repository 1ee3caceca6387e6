import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiCode } from '../../src/api/codes.ts';
import { endpointRequest, OTHER_KEY, podRequest, useSimulator } from './helpers.ts';

const sim = useSimulator();

describe('organisation isolation', () => {
  it("another organisation's pod reads as not found and cannot be changed", async () => {
    const pod = await sim.ok<{ id: string }>('POST', '/v2/pods', { body: podRequest('private') });
    await sim.advance();
    const other = { key: OTHER_KEY };
    await sim.fails(ApiCode.PodNotFound, 'GET', `/v2/pods/${pod.id}`, other);
    await sim.fails(ApiCode.PodNotFound, 'GET', `/openapi/v1/pods/${pod.id}`, other);
    await sim.fails(ApiCode.PodNotFound, 'POST', `/v2/pods/${pod.id}/pause`, other);
    await sim.fails(ApiCode.PodNotFound, 'DELETE', `/v2/pods/${pod.id}`, other);
    await sim.fails(ApiCode.PodNotFound, 'GET', `/v2/pods/${pod.id}/logs`, other);
    await sim.fails(ApiCode.PodNotFound, 'GET', `/v2/pods/${pod.id}/runtime`, other);
    await sim.fails(ApiCode.PodNotFound, 'GET', `/v2/metrics/storage/pods/${pod.id}`, other);
    assert.deepEqual(await sim.ok('GET', '/v2/pods', other), []);
    assert.deepEqual(await sim.ok('GET', '/openapi/v1/pods/list', other), []);
    const mine = await sim.ok<{ status: string }>('GET', `/v2/pods/${pod.id}`);
    assert.equal(mine.status, 'RUNNING', 'untouched by the other organisation');
  });

  it("another organisation's VMs and endpoints read as not found", async () => {
    const vm = await sim.ok<{ id: number }>('POST', '/v2/vms', {
      // 101: H100 × 1 in us-east-1 (see GET /v2/vms/types).
      body: { vmTypeId: 101, region: 'us-east-1', name: 'mine', isSpot: false },
    });
    const endpoint = await sim.ok<{ id: string }>('POST', '/v2/serverless', {
      body: endpointRequest('mine'),
    });
    await sim.advance();
    const other = { key: OTHER_KEY };
    await sim.fails(ApiCode.VmNotFound, 'GET', `/v2/vms/${vm.id}`, other);
    await sim.fails(ApiCode.VmNotFound, 'PATCH', `/v2/vms/${vm.id}`, { ...other, body: { name: 'stolen' } });
    await sim.fails(ApiCode.VmNotFound, 'DELETE', `/v2/vms/${vm.id}`, other);
    assert.equal((await sim.ok<{ total: number }>('GET', '/v2/vms', other)).total, 0);
    await sim.fails(ApiCode.ServerlessNotFound, 'GET', `/v2/serverless/${endpoint.id}`, other);
    await sim.fails(ApiCode.ServerlessNotFound, 'POST', `/v2/serverless/${endpoint.id}/stop`, other);
    await sim.fails(ApiCode.EndpointNotFound, 'POST', `/v2/serverless/${endpoint.id}/tasks`, {
      ...other,
      body: { input: 1 },
    });
    assert.deepEqual(await sim.ok('GET', '/v2/serverless', other), []);
    assert.equal((await sim.ok<{ name: string }>('GET', `/v2/vms/${vm.id}`)).name, 'mine');
  });

  it('the state view tells which organisation owns what, and never shows a key', async () => {
    const state = (await sim.running()).state.snapshot();
    assert.ok(state.pods.length > 0 && state.pods.every((pod) => pod.org === 'org-1'));
    assert.deepEqual(
      state.apiKeys.map((key) => key.org),
      ['org-1', 'org-2'],
    );
    assert.equal(JSON.stringify(state).includes(OTHER_KEY), false);
  });
});
