import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { z } from 'zod';
import { isStatus } from '../../src/kube/client.ts';
import { type RunningControllerManager, startControllerManager } from '../../src/local/controller-manager.ts';
import { API_SERVICE_NAME, TENANT_GROUP_VERSION } from '../../src/tenant-api/group.ts';
import { type RunningOperator, startOperator, useStack } from '../support/operator.ts';
import { poll } from '../support/until.ts';
import { apiServiceAvailable, tenantApiSetup } from './support.ts';

// What an APIService whose server is down does to the cluster, measured on the real apiserver with the
// namespace controller running, and the mitigation the chart takes (docs/design.md §12): the API is off
// unless asked for, and turning it off (the APIService gone) gives the cluster its discovery back.
const stack = useStack();
let operator: RunningOperator | undefined;
let controllers: RunningControllerManager;
const run = promisify(execFile);

/** What a client with legacy discovery reads of the group version: the proxy's answer. */
async function groupVersion(): Promise<{ code: number; stderr: string }> {
  try {
    await run('/usr/bin/kubectl', [
      '--kubeconfig',
      stack.plane().kubeconfigPath,
      'get',
      '--raw',
      `/apis/${TENANT_GROUP_VERSION}`,
    ]);
    return { code: 0, stderr: '' };
  } catch (error) {
    const failed = error as { code?: number; stderr?: string };
    return { code: failed.code ?? 1, stderr: failed.stderr ?? '' };
  }
}

async function namespaceState(name: string) {
  try {
    const found = await stack
      .cluster()
      .client.request(namespaceSchema, { method: 'GET', path: `/api/v1/namespaces/${name}` });
    const failing = found.status.conditions?.some(
      (c) => c.type === 'NamespaceDeletionDiscoveryFailure' && c.status === 'True',
    );
    return `${found.status.phase}${failing ? ' DiscoveryFailure' : ''}`;
  } catch (error) {
    if (isStatus(error, 404)) return 'gone';
    throw error;
  }
}

const namespaceSchema = z.looseObject({
  status: z.looseObject({
    phase: z.string().optional(),
    conditions: z.array(z.looseObject({ type: z.string(), status: z.string() })).nullish(),
  }),
});

describe('the tenant API when the operator is down', () => {
  before(async () => {
    controllers = await startControllerManager(stack.plane(), { controllers: ['namespace-controller'] });
    const setup = await tenantApiSetup(stack.plane());
    operator = await startOperator(stack.plane(), stack.sim(), { flags: setup.flags });
    await setup.register(stack.cluster().client);
  });
  after(async () => {
    await operator?.stop();
    await controllers?.stop();
  });

  test('with the operator down, namespace deletion waits on discovery; turning the API off ends it', async () => {
    const client = stack.cluster().client;
    assert.equal((await groupVersion()).code, 0);
    await operator?.stop();
    operator = undefined;
    const down = Date.now();
    // At once, a request for the group version is refused: what a client of legacy discovery reads.
    const refused = await groupVersion();
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /ServiceUnavailable|unable to handle the request/);
    // Within the aggregator's next check, the APIService is unavailable and its discovery stale.
    await poll(
      () => apiServiceAvailable(client),
      (s) => s === 'False',
      'APIService unavailable',
      120_000,
    );
    const unavailableMs = Date.now() - down;

    await stack.cluster().ensureNamespace('doomed');
    await client.request(z.unknown(), { method: 'DELETE', path: '/api/v1/namespaces/doomed' });
    await poll(
      () => namespaceState('doomed'),
      (state) => state === 'Terminating DiscoveryFailure',
      'the namespace controller to hold the namespace on the failed discovery',
      60_000,
    );
    await sleep(10_000);
    assert.equal(await namespaceState('doomed'), 'Terminating DiscoveryFailure');

    // The mitigation: the API turned off (helm upgrade --set tenantApi.enabled=false removes the APIService).
    const off = Date.now();
    await client.request(z.unknown(), {
      method: 'DELETE',
      path: `/apis/apiregistration.k8s.io/v1/apiservices/${API_SERVICE_NAME}`,
    });
    await poll(
      () => namespaceState('doomed'),
      (state) => state === 'gone',
      'the namespace deleted',
      180_000,
    );
    process.stdout.write(
      `# operator down: APIService unavailable after ${unavailableMs} ms; the namespace deleted ${Date.now() - off} ms after the APIService was removed\n`,
    );
  });
});
