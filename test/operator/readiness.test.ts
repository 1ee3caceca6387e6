import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  API_KEY,
  isReady,
  manifests,
  type RunningOperator,
  resources,
  startOperator,
  useStack,
} from '../support/operator.ts';
import { poll } from '../support/until.ts';

// The operator's own key, read from a file as the chart mounts it: a key the cloud refuses makes the
// operator unready with a reason (not warnings forever), and a corrected file is picked up without a restart.
const NS = 'readiness';
const WRONG = 'wrong-key-0f3a9c1d7e5b';
const stack = useStack();
let operator: RunningOperator;
let dir: string;

function readyz() {
  return operator.fetchHealth('/readyz?verbose');
}

describe('a key the cloud refuses', () => {
  before(async () => {
    await stack.cluster().ensureNamespace(NS);
    dir = await mkdtemp(join(tmpdir(), 'gpucloud-key-'));
    await writeFile(join(dir, 'api-key'), `${WRONG}\n`);
    operator = await startOperator(stack.plane(), stack.sim(), {
      flags: ['--api-key-file', join(dir, 'api-key')],
    });
  });
  after(async () => {
    await operator.stop();
    await rm(dir, { recursive: true, force: true });
  });

  test('makes /readyz fail with the reason, and a corrected key file makes it ready again', async () => {
    await stack.cluster().create(resources.gpuPod, NS, manifests.gpuPod('waits-for-a-key'));
    // Unready at first for the caches too: wait for the key's own check to have failed.
    const unready = await poll(
      readyz,
      (probe) => probe.status !== 200 && probe.body.includes('cloud-api-key failed'),
      'unready for the key',
      30_000,
    );
    assert.match(unready.body, /cloud-api-key failed: the cloud API rejected the API key/);
    assert.ok(!unready.body.includes(WRONG));
    await writeFile(join(dir, 'api-key'), `${API_KEY}\n`);
    await stack
      .cluster()
      .waitFor(resources.gpuPod, NS, 'waits-for-a-key', isReady('Running'), 'Ready', 60_000);
    const ready = await poll(readyz, (probe) => probe.status === 200, 'ready again', 30_000);
    assert.match(ready.body, /cloud-api-key ok/);
    assert.ok(
      !operator.logs.some((line) => line.includes(WRONG) || line.includes(API_KEY)),
      'no key in any log line',
    );
  });
});
