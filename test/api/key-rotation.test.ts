import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Registry } from 'prom-client';
import { GpuCloudClient } from '../../src/api/client.ts';
import type { ApiKeySource } from '../../src/api/client-options.ts';
import { CloudApiError } from '../../src/api/errors.ts';
import { type RunningSimulator, startSimulator } from '../../src/sim/index.ts';

// A key rotated behind the client: the stored key changes, the old one is revoked, and the first call
// that meets the 401 reads the key anew and goes through.
const OLD = 'rotation-old-key-1';
const NEW = 'rotation-new-key-2';

/** A key as a Secret holds it: `stored` is what a read would find now, `current` what was read last. */
function storedKey(initial: string) {
  let stored = initial;
  let current = initial;
  let reads = 0;
  const source: ApiKeySource = {
    current: () => current,
    refresh: async () => {
      reads++;
      current = stored;
      return current;
    },
  };
  return {
    source,
    rotate: (key: string) => {
      stored = key;
    },
    reads: () => reads,
  };
}

let sim: RunningSimulator;

describe('a rotated API key', () => {
  before(async () => {
    sim = await startSimulator({ apiKeys: [{ key: OLD, org: 'acme' }], transitionMs: 0 });
  });
  after(() => sim.stop());

  test('is read anew on the first 401 and the call succeeds, counted as a key_rotated retry', async () => {
    const key = storedKey(OLD);
    const registry = new Registry();
    const client = new GpuCloudClient({
      baseUrl: sim.url,
      apiKey: key.source,
      account: 'team-a',
      metrics: registry,
    });
    try {
      await client.pods.list();
      sim.keys.add(NEW, 'acme');
      key.rotate(NEW);
      sim.keys.revoke(OLD);
      const pods = await client.pods.list();
      assert.ok(Array.isArray(pods));
      assert.equal(key.reads(), 1, 'one read of the stored key');
      const retries = (await registry.getSingleMetric('gpucloud_api_retries_total')?.get())?.values ?? [];
      const rotated = retries.find((v) => v.labels.reason === 'key_rotated');
      assert.equal(rotated?.value, 1);
      assert.equal(rotated?.labels.account, 'team-a', 'metrics carry the account, never the key');
    } finally {
      await client.close();
    }
  });

  test('a key that stays wrong fails with the 401 after one read, and the error shows no key', async () => {
    const key = storedKey('never-valid-key-3');
    const client = new GpuCloudClient({ baseUrl: sim.url, apiKey: key.source });
    try {
      const error = await client.pods.list().then(
        () => undefined,
        (thrown: unknown) => thrown,
      );
      assert.ok(error instanceof CloudApiError, `got ${String(error)}`);
      assert.equal(error.httpStatus, 401);
      assert.equal(key.reads(), 1);
      assert.ok(!error.message.includes('never-valid-key-3'));
    } finally {
      await client.close();
    }
  });
});
