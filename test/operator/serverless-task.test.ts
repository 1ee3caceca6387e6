import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { z } from 'zod';
import { GpuCloudClient } from '../../src/api/client.ts';
import type { KubeClient } from '../../src/kube/client.ts';
import { collectionPath } from '../../src/kube/resource-type.ts';
import { OUTPUT_CAP_BYTES } from '../../src/resources/serverless-task/schema.ts';
import { clientAs, grantTenant } from '../support/impersonation.ts';
import {
  API_KEY,
  condition,
  isReady,
  manifests,
  operatorIntent,
  type RunningOperator,
  resources,
  startOperator,
  type TestObject,
  useStack,
} from '../support/operator.ts';
import { type Turn, turnsOf } from '../support/reconciled.ts';
import { poll, until } from '../support/until.ts';

// ServerlessTask as a user meets it: declared like a Job, submitted exactly once under an id derived from
// its uid, followed through lists, finished with Complete or Failed, and cleaned up by its TTL.
const NS = 'tasks';
const OTHER_NS = 'tasks-other';
const TENANT = 'tenant-t';
const WEBHOOK_KEY = 'whk-7c1d9e0f5a3b';
const stack = useStack();
let operator: RunningOperator;
let tenant: KubeClient;
let cloud: GpuCloudClient;

const cluster = () => stack.cluster();
/** Submits to endpoint `endpointId` in the call log. */
const submitsTo = (endpointId: unknown) =>
  stack
    .sim()
    .calls.log()
    .filter((call) => call.operation === 'serverless.tasks.submit' && call.params.id === endpointId).length;
const countOf = (operation: string) => stack.sim().calls.snapshot().byOperation[operation] ?? 0;
const has = (type: string, reason?: string) => (obj: TestObject | undefined) => {
  const found = condition(obj, type);
  return found?.status === 'True' && (reason === undefined || found.reason === reason);
};
const readyReason = (reason: string) => (obj: TestObject | undefined) =>
  condition(obj, 'Ready')?.reason === reason;
const syncedReason = (reason: string) => (obj: TestObject | undefined) =>
  condition(obj, 'Synced')?.reason === reason;
const create = (client: KubeClient, namespace: string, body: Record<string, unknown>) =>
  client.request(z.looseObject({}), {
    method: 'POST',
    path: collectionPath(
      body.kind === 'ServerlessTask' ? resources.serverlessTask : resources.serverlessEndpoint,
      namespace,
    ),
    body,
  });
const admin = () => cluster().client;
const taskIdOf = (obj: TestObject | undefined) => obj?.metadata.uid.replaceAll('-', '') ?? '';

async function endpoint(name: string, spec: Record<string, unknown> = {}, namespace = NS) {
  await create(admin(), namespace, manifests.serverlessEndpoint(name, spec));
  return cluster().waitFor(resources.serverlessEndpoint, namespace, name, isReady(), 'Ready');
}

describe('ServerlessTask', () => {
  before(async () => {
    await cluster().ensureNamespace(NS);
    await cluster().ensureNamespace(OTHER_NS);
    await grantTenant(admin(), NS, TENANT, ['get', 'list', 'watch', 'create', 'delete']);
    tenant = clientAs(stack.plane(), TENANT);
    cloud = new GpuCloudClient({ baseUrl: stack.sim().url, apiKey: API_KEY });
    operator = await startOperator(stack.plane(), stack.sim());
    await endpoint('queue', { workers: 2 });
  });
  after(async () => {
    await operator?.stop();
  });

  test('a task is submitted once, under its uid, and ends Complete with its output and the cloud times', async () => {
    await create(tenant, NS, manifests.serverlessTask('hello', 'queue', { input: { prompt: 'hi', n: 2 } }));
    const done = await cluster().waitFor(resources.serverlessTask, NS, 'hello', has('Complete'), 'Complete');
    const status = done?.status ?? {};
    assert.equal(status.taskId, taskIdOf(done));
    assert.match(String(status.taskId), /^[A-Za-z0-9_]+$/);
    assert.equal(status.phase, 'SUCCESS');
    assert.deepEqual(status.output, { echo: { prompt: 'hi', n: 2 } });
    assert.equal(condition(done, 'Ready')?.reason, 'Succeeded');
    assert.ok(Date.parse(String(status.createdAt)) <= Date.parse(String(status.completionTime)));
    const inCloud = await cloud.serverless.tasks.get(String(status.endpointId), String(status.taskId));
    assert.equal(inCloud.status, 'SUCCESS');
    assert.equal(submitsTo(status.endpointId), 1, 'one submit for one task');
  });

  test('kubectl wait --for=condition=Complete returns once the task finished', async () => {
    await create(tenant, NS, manifests.serverlessTask('waited', 'queue'));
    const { stdout } = await promisify(execFile)('/usr/bin/kubectl', [
      '--kubeconfig',
      stack.plane().kubeconfigPath,
      'wait',
      '-n',
      NS,
      '--for=condition=Complete',
      'serverlesstask/waited',
      '--timeout=60s',
    ]);
    assert.match(stdout, /serverlesstask\.gpucloud\.io\/waited condition met/);
  });

  test('tasks in flight cost lists; each finished task costs exactly one get', async () => {
    await endpoint('narrow', { workers: 1 });
    const getsBefore = countOf('serverless.tasks.get');
    const names = ['q1', 'q2', 'q3', 'q4', 'q5', 'q6'];
    for (const name of names) await create(tenant, NS, manifests.serverlessTask(name, 'narrow'));
    for (const name of names) {
      await cluster().waitFor(resources.serverlessTask, NS, name, has('Complete'), 'Complete', 60_000);
    }
    assert.equal(countOf('serverless.tasks.get') - getsBefore, names.length);
    assert.ok(countOf('serverless.tasks.list') > 0, 'tasks in flight were followed by lists');
  });

  test('output larger than the cap stays out of status, with its size', async () => {
    const big = 'x'.repeat(OUTPUT_CAP_BYTES + 100);
    await create(tenant, NS, manifests.serverlessTask('big', 'queue', { input: { text: big } }));
    const done = await cluster().waitFor(resources.serverlessTask, NS, 'big', has('Complete'), 'Complete');
    assert.equal(done?.status?.output, undefined);
    assert.equal(done?.status?.outputTruncated, true);
    assert.ok(Number(done?.status?.outputBytes) > OUTPUT_CAP_BYTES);
  });

  test('a failed task ends Failed with the cloud error, and a Warning', async () => {
    await stack.sim().faults.set({ taskFailureRate: 1 });
    try {
      await create(tenant, NS, manifests.serverlessTask('doomed', 'queue'));
      const failed = await cluster().waitFor(resources.serverlessTask, NS, 'doomed', has('Failed'), 'Failed');
      assert.equal(failed?.status?.phase, 'FAILED');
      assert.match(String(failed?.status?.error), /simulated fault/);
      assert.equal(condition(failed, 'Failed')?.reason, 'TaskFailed');
      assert.equal(condition(failed, 'Complete'), undefined);
      // The recorder posts the Warning beside the status write, not before it: wait for it to land.
      await until(
        async () =>
          (await cluster().events(NS, 'doomed')).some(
            (event) => event.type === 'Warning' && event.reason === 'TaskFailed',
          ),
        'the Warning TaskFailed',
      );
    } finally {
      await stack.sim().faults.reset();
    }
  });

  test('a task waits for a missing endpoint without calling the cloud, then runs once it exists', async () => {
    const submitsBefore = countOf('serverless.tasks.submit');
    await create(tenant, NS, manifests.serverlessTask('early', 'later'));
    await cluster().waitFor(
      resources.serverlessTask,
      NS,
      'early',
      readyReason('EndpointNotFound'),
      'waiting',
    );
    assert.equal(countOf('serverless.tasks.submit'), submitsBefore);
    await endpoint('later');
    await cluster().waitFor(resources.serverlessTask, NS, 'early', has('Complete'), 'Complete', 60_000);
  });

  test('a task for a stopped endpoint waits until it runs', async () => {
    await endpoint('sleepy', { stopped: true });
    await create(tenant, NS, manifests.serverlessTask('patient', 'sleepy'));
    await cluster().waitFor(
      resources.serverlessTask,
      NS,
      'patient',
      readyReason('EndpointNotRunning'),
      'waiting',
    );
    await cluster().patch(resources.serverlessEndpoint, NS, 'sleepy', { spec: { stopped: false } });
    await cluster().waitFor(resources.serverlessTask, NS, 'patient', has('Complete'), 'Complete', 60_000);
  });

  test('a task for an endpoint not in QUEUE mode is refused once, with no cloud call', async () => {
    await endpoint('balanced', { serviceMode: 'ALB' });
    const submitsBefore = countOf('serverless.tasks.submit');
    await create(tenant, NS, manifests.serverlessTask('misrouted', 'balanced'));
    const refused = await cluster().waitFor(
      resources.serverlessTask,
      NS,
      'misrouted',
      syncedReason('EndpointNotQueue'),
      'refused',
    );
    assert.match(condition(refused, 'Synced')?.message ?? '', /ALB mode; tasks go only to QUEUE endpoints/);
    // Its reconciles, as the operator's log tells each: the refusal ends one for good (terminal, no
    // requeue), and only a change of the task looks at it again, to the same refusal.
    const task = { controller: 'serverlesstask', namespace: NS, name: 'misrouted' };
    const refusals = (turns: Turn[]) => turns.filter((turn) => turn.terminal).length;
    await poll(
      async () => turnsOf(operator, task),
      (turns) => refusals(turns) === 1,
      'its refusal',
    );
    await cluster().patch(resources.serverlessTask, NS, 'misrouted', {
      metadata: { annotations: { 'tasks.test/nudge': '1' } },
    });
    const turns = await poll(
      async () => turnsOf(operator, task),
      (seen) => refusals(seen) === 2,
      'its refusal looked at again after a change',
    );
    assert.deepEqual(
      turns.slice(turns.findIndex((turn) => turn.terminal)).filter((turn) => turn.result !== 'success'),
      [
        { result: 'error', terminal: true },
        { result: 'error', terminal: true },
      ],
      'refused, never retried: not a retry loop',
    );
    await poll(
      () => cluster().occurrences(NS, 'misrouted', 'EndpointNotQueue'),
      (told) => told > 0,
      'the EndpointNotQueue event',
    );
    assert.equal(countOf('serverless.tasks.submit'), submitsBefore);
    assert.equal(
      await cluster().occurrences(NS, 'misrouted', 'EndpointNotQueue'),
      1,
      'told once: its repeat is the condition',
    );
  });

  test('a tenant cannot send a task to an endpoint of another namespace', async () => {
    await endpoint('private', {}, OTHER_NS);
    const submitsBefore = countOf('serverless.tasks.submit');
    await create(tenant, NS, manifests.serverlessTask('reach', 'private'));
    await cluster().waitFor(
      resources.serverlessTask,
      NS,
      'reach',
      readyReason('EndpointNotFound'),
      'waiting',
    );
    await assert.rejects(
      create(tenant, NS, {
        ...manifests.serverlessTask('reach-ns', 'private'),
        spec: { endpointRef: { name: 'private', namespace: OTHER_NS } },
      })
        .then(() => cluster().get(resources.serverlessTask, NS, 'reach-ns'))
        .then((obj) => {
          // The schema has no namespace: the apiserver prunes it, and the name resolves in the task's own.
          assert.deepEqual(obj?.spec?.endpointRef, { name: 'private' });
          throw new Error('pruned');
        }),
      /pruned/,
    );
    assert.equal(countOf('serverless.tasks.submit'), submitsBefore);
  });

  test("the webhook's key comes from a Secret and appears in no status, event or log", async () => {
    const keys: string[] = [];
    const hook = createServer((request, response) => {
      keys.push(String(request.headers['x-api-key']));
      request.resume();
      response.end('{}');
    });
    await new Promise<void>((resolve) => hook.listen(0, '127.0.0.1', resolve));
    const { port } = hook.address() as AddressInfo;
    after(() => hook.close());
    await admin().request(z.unknown(), {
      method: 'POST',
      path: collectionPath(resources.secret, NS),
      body: {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'hook' },
        stringData: { key: WEBHOOK_KEY },
      },
    });
    await create(
      tenant,
      NS,
      manifests.serverlessTask('hooked', 'queue', {
        webhook: `http://127.0.0.1:${port}/results`,
        webhookAuthKeySecretRef: { name: 'hook', key: 'key' },
      }),
    );
    const done = await cluster().waitFor(resources.serverlessTask, NS, 'hooked', has('Complete'), 'Complete');
    await poll(
      async () => keys,
      (seen) => seen.length > 0,
      'the webhook delivery',
    );
    assert.deepEqual(keys, [WEBHOOK_KEY], 'the cloud sent the key from the Secret to the webhook');
    const events = await cluster().events(NS, 'hooked');
    for (const text of [JSON.stringify(done), JSON.stringify(events), operator.logs.join('\n')]) {
      assert.ok(!text.includes(WEBHOOK_KEY));
    }
  });

  test('ttlSecondsAfterFinished deletes a finished task; deleting one in flight makes no cloud call', async () => {
    await create(tenant, NS, manifests.serverlessTask('brief', 'queue', { ttlSecondsAfterFinished: 1 }));
    await cluster().waitFor(resources.serverlessTask, NS, 'brief', has('Complete'), 'Complete');
    await cluster().waitFor(resources.serverlessTask, NS, 'brief', (obj) => obj === undefined, 'deleted');

    await endpoint('idle', { workers: 0 });
    await create(tenant, NS, manifests.serverlessTask('queued', 'idle'));
    await cluster().waitFor(resources.serverlessTask, NS, 'queued', readyReason('Processing'), 'queued');
    const mutating = () =>
      stack
        .sim()
        .calls.log()
        .filter((call) => call.method !== 'GET').length;
    const before = mutating();
    await cluster().delete(resources.serverlessTask, NS, 'queued');
    await cluster().waitFor(resources.serverlessTask, NS, 'queued', (obj) => obj === undefined, 'deleted');
    assert.equal(mutating(), before);
  });

  test('a crash between submit and the recorded id does not submit the task again', async () => {
    await operator.stop();
    let submitted = 0;
    try {
      await create(admin(), NS, manifests.serverlessTask('crashed', 'queue'));
      const made = await cluster().get(resources.serverlessTask, NS, 'crashed');
      const endpointObj = await cluster().get(resources.serverlessEndpoint, NS, 'queue');
      const endpointId = String(endpointObj?.status?.id);
      // What the crashed operator did: its intent on the resource, and the submit under the uid.
      await cluster().patch(resources.serverlessTask, NS, 'crashed', {
        metadata: { annotations: operatorIntent(made?.metadata.uid ?? '', 'crashed', Date.now() - 1000) },
      });
      await cloud.serverless.tasks.submit(endpointId, { taskId: taskIdOf(made), input: { before: 'crash' } });
      submitted = submitsTo(endpointId);
    } finally {
      operator = await startOperator(stack.plane(), stack.sim());
    }
    const done = await cluster().waitFor(
      resources.serverlessTask,
      NS,
      'crashed',
      has('Complete'),
      'Complete',
    );
    assert.deepEqual(
      done?.status?.output,
      { echo: { before: 'crash' } },
      'the submitted task, not a new one',
    );
    assert.equal(submitsTo(done?.status?.endpointId), submitted, 'the operator sent no submit of its own');
    const events = await cluster().events(NS, 'crashed');
    assert.ok(events.some((event) => event.reason === 'Recovered'));
    assert.ok(!events.some((event) => event.reason === 'Created'));
  });
});
