import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Registry } from 'prom-client';
import { ServingError } from '../../src/serving/status.ts';
import { TenantLimits } from '../../src/tenant-api/limits.ts';
import { TenantApiMetrics } from '../../src/tenant-api/metrics.ts';

function limits(settings: Partial<ConstructorParameters<typeof TenantLimits>[0]> = {}) {
  const registry = new Registry();
  const made = new TenantLimits(
    { callsPerSecond: 2, maxWaiting: 3, streamsPerUser: 2, streamsPerAccount: 3, ...settings },
    new TenantApiMetrics(registry),
  );
  return { limits: made, registry };
}

const refusal = (work: () => unknown): number => {
  try {
    work();
    return 0;
  } catch (error) {
    assert.ok(error instanceof ServingError);
    return error.code;
  }
};

test('followed logs are bounded per user and per account, and a closed one frees its place once', async () => {
  const { limits: l, registry } = limits();
  const a1 = l.openStream('alice', 'team-a');
  l.openStream('alice', 'team-a');
  assert.equal(
    refusal(() => l.openStream('alice', 'team-a')),
    429,
  );
  l.openStream('bob', 'team-a');
  assert.equal(
    refusal(() => l.openStream('carol', 'team-a')),
    429,
  );
  assert.equal(
    refusal(() => l.openStream('carol', 'team-b')),
    0,
  );
  a1();
  a1();
  assert.equal(
    refusal(() => l.openStream('carol', 'team-a')),
    0,
  );
  assert.equal(
    refusal(() => l.openStream('dave', 'team-a')),
    429,
  );
  const text = await registry.metrics();
  assert.match(text, /gpucloud_tenant_api_log_streams\{account="team-a"\} 3/);
  assert.match(text, /gpucloud_tenant_api_refused_total\{reason="user-streams"\} 1/);
  assert.match(text, /gpucloud_tenant_api_refused_total\{reason="account-streams"\} 2/);
});

test("cloud calls wait for the account's tenant budget, and a long line is refused with 429", async () => {
  const { limits: l, registry } = limits({ callsPerSecond: 2, maxWaiting: 3 });
  const signal = new AbortController().signal;
  const started = performance.now();
  await l.spend('team-a', 2, signal); // the burst
  await l.spend('team-a', 1, signal); // half a second later
  assert.ok(performance.now() - started >= 400, 'the third call waited for its token');
  const waiting = [l.spend('team-a', 1, signal), l.spend('team-a', 1, signal), l.spend('team-a', 1, signal)];
  await assert.rejects(
    l.spend('team-a', 1, signal),
    (error: unknown) => error instanceof ServingError && error.code === 429,
  );
  await l.spend('team-b', 2, signal); // another account has its own budget
  await Promise.all(waiting);
  assert.match(await registry.metrics(), /gpucloud_tenant_api_cloud_calls_total\{account="team-a"\} 6/);
});
