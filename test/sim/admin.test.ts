import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiCode } from '../../src/api/codes.ts';
import { startSimulator } from '../../src/sim/index.ts';
import { KEY, podRequest, STEP, useSimulator } from './helpers.ts';

const sim = useSimulator({
  apiKeys: [
    { key: KEY, org: 'acme' },
    { key: 'admin-test-restricted', org: 'acme', canTerminate: false },
  ],
});

describe('admin endpoints under /_sim', () => {
  it('POST /faults changes faults, GET reads them, DELETE resets; a bad field is a 400 naming it', async () => {
    const set = await sim.admin('POST', '/faults', { errorRate: 1, operations: ['vms.list'] });
    assert.equal(set.status, 200);
    assert.equal((set.body as { errorRate: number }).errorRate, 1);
    assert.equal((await sim.call('GET', '/v2/vms')).status, 500);
    assert.deepEqual((await sim.admin('GET', '/faults')).body, (await sim.running()).faults.config);
    const bad = await sim.admin('POST', '/faults', { errorRate: 'often' });
    assert.equal(bad.status, 400);
    assert.match((bad.body as { error: string }).error, /errorRate/);
    assert.equal((await sim.admin('DELETE', '/faults')).status, 200);
    await sim.ok('GET', '/v2/vms');
  });

  it('GET /state shows every resource with its organisation, name, status and environment', async () => {
    const pod = await sim.ok<{ id: string }>('POST', '/v2/pods', {
      body: podRequest('stateful', { environmentVars: [{ key: 'OWNER', value: 'ns/stateful' }] }),
    });
    const { body } = await sim.admin('GET', '/state');
    const state = body as {
      pods: Array<{
        id: string;
        org: string;
        name: string;
        status: string;
        environment: Record<string, string>;
      }>;
    };
    const seen = state.pods.find((p) => p.id === pod.id);
    assert.deepEqual(
      { org: seen?.org, name: seen?.name, status: seen?.status, environment: seen?.environment },
      {
        org: 'acme',
        name: 'stateful',
        status: 'INITIALIZING',
        environment: { OWNER: 'ns/stateful', POD_ID: pod.id },
      },
    );
  });

  it('GET /calls counts API calls per operation; DELETE /calls resets', async () => {
    await sim.admin('DELETE', '/calls');
    for (let i = 0; i < 3; i++) await sim.call('GET', '/v2/pods');
    await sim.call('GET', '/v2/vms/1');
    await sim.call('GET', '/v2/nowhere');
    const { body } = await sim.admin('GET', '/calls');
    assert.deepEqual(body, { total: 5, byOperation: { '(unrouted)': 1, 'pods.list': 3, 'vms.get': 1 } });
  });

  it('POST /clock/advance moves simulated time; fail-pod and preempt act at once', async () => {
    const pod = await sim.ok<{ id: string }>('POST', '/v2/pods', {
      body: podRequest('clocked', { isSpot: true }),
    });
    const before = (await sim.running()).clock.now();
    const advanced = await sim.admin('POST', '/clock/advance', { ms: STEP });
    assert.equal((advanced.body as { now: number }).now, before + STEP);
    assert.equal((await sim.ok<{ status: string }>('GET', `/v2/pods/${pod.id}`)).status, 'RUNNING');
    assert.equal(
      (await sim.admin('POST', '/faults/fail-pod', { id: pod.id, status: 'DEGRADED' })).status,
      200,
    );
    assert.equal(
      (await sim.admin('POST', '/faults/fail-pod', { id: pod.id, status: 'DEGRADED' })).status,
      409,
    );
    assert.equal((await sim.admin('POST', '/faults/preempt', { id: pod.id })).status, 200);
    assert.equal((await sim.ok<{ status: string }>('GET', `/v2/pods/${pod.id}`)).status, 'FAILED');
    assert.equal(
      (await sim.admin('POST', '/faults/preempt', { id: pod.id })).status,
      409,
      'a failed pod has nothing to preempt',
    );
  });

  it('POST /faults/terminate-permission grants and withdraws a key', async () => {
    const vm = await sim.ok<{ id: number }>('POST', '/v2/vms', {
      // 101: H100 × 1 in us-east-1 (see GET /v2/vms/types).
      body: { vmTypeId: 101, region: 'us-east-1', name: 'perm', isSpot: false },
    });
    await sim.advance();
    await sim.admin('POST', '/faults/terminate-permission', { apiKey: KEY, allowed: false });
    await sim.fails(ApiCode.NoTerminatePermission, 'DELETE', `/v2/vms/${vm.id}`);
    await sim.admin('POST', '/faults/terminate-permission', { apiKey: KEY, allowed: true });
    await sim.ok('DELETE', `/v2/vms/${vm.id}`);
    const unknown = await sim.admin('POST', '/faults/terminate-permission', {
      apiKey: 'nobody',
      allowed: true,
    });
    assert.equal(unknown.status, 400);
    assert.equal(JSON.stringify(unknown.body).includes('nobody'), false, 'a key is never echoed');
  });

  it('PUT /capacity resizes a pool; an unknown admin path is 404', async () => {
    const resized = await sim.admin('PUT', '/capacity', {
      region: 'us-east-1',
      gpuType: 'NVIDIA L40S',
      gpus: 0,
    });
    assert.equal(resized.status, 200);
    await sim.fails(ApiCode.NoCapacity, 'POST', '/v2/pods', { body: podRequest('no-room') });
    assert.equal((await sim.admin('GET', '/nothing')).status, 404);
  });

  it('with an admin token configured, calls without it are refused', async (t) => {
    const guarded = await startSimulator({ apiKeys: ['k'], adminToken: 'letmein' });
    t.after(() => guarded.stop());
    assert.equal((await fetch(`${guarded.url}/_sim/state`)).status, 403);
    const allowed = await fetch(`${guarded.url}/_sim/state`, { headers: { 'x-sim-admin-token': 'letmein' } });
    assert.equal(allowed.status, 200);
  });
});
