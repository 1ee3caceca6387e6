import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiCode } from '../../src/api/codes.ts';
import { startSimulator } from '../../src/sim/index.ts';
import { KEY, podRequest, useSimulator } from './helpers.ts';

const sim = useSimulator();
const faults = async () => (await sim.running()).faults;

/** Runs `body` with `patch` applied, and the faults reset afterwards whatever happens. */
async function withFaults(
  patch: Parameters<Awaited<ReturnType<typeof faults>>['set']>[0],
  body: () => Promise<void>,
) {
  (await faults()).set(patch);
  try {
    await body();
  } finally {
    (await faults()).reset();
  }
}

const podNames = async () => (await sim.running()).state.snapshot().pods.map((pod) => pod.name);

describe('request faults', () => {
  it('errorRate answers HTTP 500 with code 10002, only for the operations named', async () => {
    await withFaults({ errorRate: 1, operations: ['pods.list'] }, async () => {
      const failed = await sim.fails(ApiCode.SystemError, 'GET', '/v2/pods');
      assert.equal(failed.status, 500);
      await sim.ok('GET', '/v2/vms');
    });
    await sim.ok('GET', '/v2/pods');
  });

  it('rateLimitRate answers HTTP 429 with Retry-After', async () => {
    await withFaults({ rateLimitRate: 1, retryAfterSeconds: 7 }, async () => {
      const limited = await sim.call('GET', '/v2/pods');
      assert.equal(limited.status, 429);
      assert.equal(limited.headers.get('retry-after'), '7');
      assert.notEqual(limited.body.code, ApiCode.Success);
    });
  });

  it('latencyMs holds calls back', async () => {
    await withFaults({ latencyMs: 60_000, operations: ['pods.list'] }, async () => {
      const { url } = await sim.running();
      await assert.rejects(
        fetch(`${url}/v2/pods`, { headers: { 'x-api-key': KEY }, signal: AbortSignal.timeout(200) }),
        { name: 'TimeoutError' },
      );
      await sim.ok('GET', '/v2/vms');
    });
  });

  it('dropRate destroys the connection; before the effect by default, after it with dropAfterEffect', async () => {
    await withFaults({ dropRate: 1, operations: ['pods.create'] }, async () => {
      await assert.rejects(sim.call('POST', '/v2/pods', { body: podRequest('dropped-unseen') }), TypeError);
      assert.equal((await podNames()).includes('dropped-unseen'), false);
    });
    await withFaults({ dropRate: 1, dropAfterEffect: true, operations: ['pods.create'] }, async () => {
      await assert.rejects(sim.call('POST', '/v2/pods', { body: podRequest('dropped-after') }), TypeError);
      assert.equal(
        (await podNames()).includes('dropped-after'),
        true,
        'the pod was made although no answer came',
      );
    });
    await sim.ok('GET', '/v2/pods');
  });

  it('refuses a fault setting out of range or naming an unknown operation', async () => {
    const control = await faults();
    assert.throws(() => control.set({ errorRate: 2 }), /errorRate/);
    assert.throws(() => control.set({ operations: ['pods.explode'] }), /pods\.explode/);
    assert.equal(control.config.errorRate, 0);
  });

  it('faults given at start are active at once', async (t) => {
    const faulty = await startSimulator({ apiKeys: ['k'], faults: { errorRate: 1 } });
    t.after(() => faulty.stop());
    const response = await fetch(`${faulty.url}/v2/pods`, { headers: { 'x-api-key': 'k' } });
    assert.equal(response.status, 500);
    assert.equal(faulty.faults.config.errorRate, 1);
  });
});

describe('resource faults', () => {
  async function runningPods(
    prefix: string,
    count: number,
    extra: Record<string, unknown> = {},
  ): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < count; i++) {
      ids.push(
        (await sim.ok<{ id: string }>('POST', '/v2/pods', { body: podRequest(`${prefix}-${i}`, extra) })).id,
      );
    }
    await sim.advance();
    return ids;
  }
  const statusOf = async (id: string) => (await sim.ok<{ status: string }>('GET', `/v2/pods/${id}`)).status;

  it('podFailureRate and podDegradeRate move RUNNING pods to FAILED and DEGRADED', async () => {
    const failing = await runningPods('failing', 3);
    await withFaults({ podFailureRate: 1 }, () => sim.advance(1000));
    for (const id of failing) assert.equal(await statusOf(id), 'FAILED');
    const degrading = await runningPods('degrading', 2);
    await withFaults({ podDegradeRate: 1 }, () => sim.advance(1000));
    for (const id of degrading) assert.equal(await statusOf(id), 'DEGRADED');
    const logs = await sim.ok<{ items: Array<{ content: string; level: string }> }>(
      'GET',
      `/v2/pods/${degrading[0]}/logs?type=SYSTEM`,
    );
    assert.ok(logs.items.some((line) => line.level === 'ERROR' && /degraded/.test(line.content)));
  });

  it('with rates at zero nothing breaks', async () => {
    const [id] = await runningPods('steady', 1);
    await sim.advance(3_600_000);
    assert.equal(await statusOf(id as string), 'RUNNING');
  });

  it('spotPreemptionRate preempts running spot pods and spot VMs, not on-demand ones', async () => {
    const [spot] = await runningPods('spot', 1, { isSpot: true });
    const [onDemand] = await runningPods('on-demand', 1);
    const vm = await sim.ok<{ id: number }>('POST', '/v2/vms', {
      // 201: A100 × 1, offered as spot in us-east-1 (see GET /v2/vms/types).
      body: { vmTypeId: 201, region: 'us-east-1', name: 'spot-vm', isSpot: true },
    });
    await sim.advance();
    await withFaults({ spotPreemptionRate: 1 }, () => sim.advance(1000));
    assert.equal(await statusOf(spot as string), 'FAILED');
    assert.equal(await statusOf(onDemand as string), 'RUNNING');
    assert.equal((await sim.ok<{ status: string }>('GET', `/v2/vms/${vm.id}`)).status, 'FAILED');
  });

  it('failPod and preempt act on one resource at once', async () => {
    const control = await faults();
    const [pod, spot] = [
      ...(await runningPods('single', 1)),
      ...(await runningPods('single-spot', 1, { isSpot: true })),
    ];
    assert.ok(control.failPod(pod as string, 'DEGRADED'));
    assert.equal(await statusOf(pod as string), 'DEGRADED');
    assert.equal(control.failPod(pod as string, 'DEGRADED'), false, 'only a RUNNING pod degrades');
    assert.ok(control.preempt(spot as string));
    assert.equal(await statusOf(spot as string), 'FAILED');
    assert.equal(control.preempt('1'), false);
  });
});
