import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { z } from 'zod';
import { GpuCloudClient } from '../../src/api/client.ts';
import { objectPath } from '../../src/kube/resource-type.ts';
import { EXTERNAL_ID } from '../../src/managed/core/annotations.ts';
import {
  API_KEY,
  condition,
  isReady,
  manifests,
  type RunningOperator,
  resources,
  startOperator,
  type TestObject,
  useStack,
} from '../support/operator.ts';
import { poll } from '../support/until.ts';

// What the operator owns of a cloud object, and no more: adoption keeps what it adopts, Observe sends
// nothing that changes the cloud, a removed field is cleared or refused, drift is shown, and a preempted
// spot pod is replaced by exactly one. Proved on the simulator's call log and on the cloud's state.
const NS = 'ownership';
const stack = useStack();
let operator: RunningOperator;
let cloud: GpuCloudClient;

/** Every call since `from` (an index into the log) that could change cloud object `id`. */
function mutationsOf(id: string, from: number) {
  return stack
    .sim()
    .calls.log()
    .slice(from)
    .filter((call) => call.method !== 'GET' && Object.values(call.params).includes(id));
}

const logMark = () => stack.sim().calls.log().length;
const spec = (obj: TestObject | undefined): Record<string, unknown> => obj?.spec ?? {};
const syncedReason = (reason: string) => (obj: TestObject | undefined) =>
  condition(obj, 'Synced')?.reason === reason;

async function removeField(resource: typeof resources.gpuPod, name: string, field: string) {
  return stack.cluster().client.request(z.looseObject({}), {
    method: 'PATCH',
    path: objectPath(resource, { namespace: NS, name }),
    patchType: 'application/json-patch+json',
    body: [{ op: 'remove', path: `/spec/${field}` }],
  });
}

describe('owning only what was asked', () => {
  before(async () => {
    await stack.cluster().ensureNamespace(NS);
    cloud = new GpuCloudClient({ baseUrl: stack.sim().url, apiKey: API_KEY });
    operator = await startOperator(stack.plane(), stack.sim());
  });
  after(async () => {
    if (process.env.DEBUG_LOGS)
      console.log(operator.logs.filter((l) => /adopt-|"level":(40|50)/.test(l)).join('\n'));
    await operator.stop();
    await cloud.close();
  });

  test('adopting a PAUSED pod keeps it paused and fills paused, isSpot and name from the cloud', async () => {
    const made = await cloud.pods.create({
      name: 'made-outside',
      image: 'ubuntu:24.04',
      gpuType: 'NVIDIA L40S',
      gpuCount: 1,
    });
    await poll(
      () => cloud.pods.get(made.id),
      (pod) => pod.status === 'RUNNING',
      'pod running',
    );
    await cloud.pods.pause(made.id);
    await poll(
      () => cloud.pods.get(made.id),
      (pod) => pod.status === 'PAUSED',
      'pod paused',
    );
    const mark = logMark();
    await stack
      .cluster()
      .create(
        resources.gpuPod,
        NS,
        manifests.gpuPod('adopt-paused', {}, { annotations: { [EXTERNAL_ID]: made.id } }),
      );
    const adopted = await stack
      .cluster()
      .waitFor(resources.gpuPod, NS, 'adopt-paused', isReady('Paused'), 'Ready, Paused');
    assert.equal(spec(adopted).paused, true);
    assert.equal(spec(adopted).isSpot, false);
    assert.equal(spec(adopted).name, 'made-outside');
    assert.deepEqual(adopted?.status?.lateInitialized, ['isSpot', 'name', 'paused']);
    assert.deepEqual(mutationsOf(made.id, mark), []);
    assert.equal((await cloud.pods.get(made.id)).status, 'PAUSED');

    // Late initialisation ran once: removing paused now means "not paused", and resumes the pod.
    await removeField(resources.gpuPod, 'adopt-paused', 'paused');
    await stack
      .cluster()
      .waitFor(resources.gpuPod, NS, 'adopt-paused', isReady('Running'), 'resumed and Running');
    const after = await stack.cluster().get(resources.gpuPod, NS, 'adopt-paused');
    assert.equal(spec(after).paused, undefined, 'a removed field is never filled again');
  });

  test('adopting an endpoint with 5 workers keeps 5 workers; a new one starts with 1, written with its id', async () => {
    const made = await cloud.serverless.create({
      name: 'five-workers',
      image: 'vllm/vllm-openai:v0.6.0',
      resources: [{ region: 'us-east-1', gpuType: 'NVIDIA GeForce RTX 4090', gpuCount: 1 }],
      workers: 5,
      serviceMode: 'QUEUE',
    });
    const mark = logMark();
    const { workers: _workers, ...withoutWorkers } = manifests.serverlessEndpoint('adopt-five').spec;
    await stack.cluster().create(resources.serverlessEndpoint, NS, {
      ...manifests.serverlessEndpoint('adopt-five', {}, { annotations: { [EXTERNAL_ID]: made.id } }),
      spec: withoutWorkers,
    });
    const adopted = await stack
      .cluster()
      .waitFor(resources.serverlessEndpoint, NS, 'adopt-five', isReady(), 'Ready');
    assert.equal(spec(adopted).workers, 5);
    assert.equal(adopted?.status?.replicas, 5);
    assert.deepEqual(mutationsOf(made.id, mark), []);
    assert.equal(
      (await cloud.serverless.list()).find((endpoint) => endpoint.id === made.id)?.totalWorkers,
      5,
    );

    await stack.cluster().create(resources.serverlessEndpoint, NS, {
      ...manifests.serverlessEndpoint('fresh'),
      spec: withoutWorkers,
    });
    const fresh = await stack
      .cluster()
      .waitFor(resources.serverlessEndpoint, NS, 'fresh', isReady(), 'Ready');
    assert.equal(spec(fresh).workers, 1);
    assert.ok((fresh?.status?.lateInitialized as string[] | undefined)?.includes('workers'));
    const id = fresh?.status?.id;
    assert.equal((await cloud.serverless.list()).find((endpoint) => endpoint.id === id)?.totalWorkers, 1);
  });

  test('Observe mirrors a pod into status and sends no create, change or delete, even on deletion', async () => {
    const made = await cloud.pods.create({
      name: 'observed',
      image: 'ubuntu:24.04',
      gpuType: 'NVIDIA L40S',
      gpuCount: 1,
    });
    await poll(
      () => cloud.pods.get(made.id),
      (pod) => pod.status === 'RUNNING',
      'pod running',
    );
    const mark = logMark();
    await stack.cluster().create(
      resources.gpuPod,
      NS,
      manifests.gpuPod(
        'observer',
        // The spec asks for a pause and another image: Observe must do nothing about either.
        { paused: true, image: 'something/else:1', managementPolicies: ['Observe'] },
        { annotations: { [EXTERNAL_ID]: made.id } },
      ),
    );
    const observed = await stack
      .cluster()
      .waitFor(
        resources.gpuPod,
        NS,
        'observer',
        (obj) => obj?.status?.sshCommand !== undefined,
        'ssh command in status',
      );
    assert.equal(observed?.status?.id, made.id);
    assert.equal(observed?.status?.phase, 'RUNNING');
    assert.equal(condition(observed, 'Synced')?.status, 'True');
    assert.equal(
      observed?.status?.lateInitialized,
      undefined,
      'no late initialisation without LateInitialize',
    );
    await stack.cluster().delete(resources.gpuPod, NS, 'observer');
    await stack.cluster().waitFor(resources.gpuPod, NS, 'observer', (obj) => obj === undefined, 'gone');
    assert.deepEqual(mutationsOf(made.id, mark), []);
    assert.equal((await cloud.pods.get(made.id)).status, 'RUNNING');
    const creates = stack
      .sim()
      .calls.log()
      .slice(mark)
      .filter((call) => call.operation.endsWith('.create'));
    assert.deepEqual(creates, []);
  });

  test('Observe without an id is a clear condition, not a create', async () => {
    const mark = logMark();
    await stack
      .cluster()
      .create(resources.gpuPod, NS, manifests.gpuPod('observe-nothing', { managementPolicies: ['Observe'] }));
    const refused = await stack
      .cluster()
      .waitFor(resources.gpuPod, NS, 'observe-nothing', syncedReason('ExternalIdRequired'), 'refused');
    assert.match(condition(refused, 'Synced')?.message ?? '', /external-id/);
    const creates = stack
      .sim()
      .calls.log()
      .slice(mark)
      .filter((call) => call.operation.endsWith('.create'));
    assert.deepEqual(creates, []);
  });

  test('admission refuses policy lists that make no sense', async () => {
    const refused = (policies: string[], extra: Record<string, unknown> = {}) =>
      assert.rejects(
        stack
          .cluster()
          .create(
            resources.gpuPod,
            NS,
            manifests.gpuPod(`bad-${policies.length}`, { managementPolicies: policies, ...extra }),
          ),
      );
    await refused(['*', 'Observe']);
    await refused(['Create', 'Delete']);
    await refused(['Observe'], { isSpot: true, recoveryPolicy: 'Recreate' });
  });

  test('removing a webhook is refused at admission; removing imageRegistry clears it in the cloud', async () => {
    await stack.cluster().create(
      resources.serverlessEndpoint,
      NS,
      manifests.serverlessEndpoint('hooked', {
        webhook: 'https://results.example.com/hook',
        imageRegistry: 'registry.example.com',
      }),
    );
    const ready = await stack
      .cluster()
      .waitFor(resources.serverlessEndpoint, NS, 'hooked', isReady(), 'Ready');
    const id = ready?.status?.id;
    await assert.rejects(removeField(resources.serverlessEndpoint, 'hooked', 'webhook'), (error: Error) => {
      assert.match(error.message, /webhook cannot be removed: the cloud API has no way to clear a webhook/);
      return true;
    });
    await removeField(resources.serverlessEndpoint, 'hooked', 'imageRegistry');
    const cleared = await poll(
      async () => (await cloud.serverless.list()).find((endpoint) => endpoint.id === id),
      (endpoint) => endpoint?.imageRegistry === '',
      'imageRegistry cleared in the cloud',
    );
    assert.equal(cleared?.webhook, 'https://results.example.com/hook');
  });

  test('a pod whose image differs from the cloud is Drifted, naming the field, and is not re-created', async () => {
    const made = await cloud.pods.create({
      name: 'drifter',
      image: 'ubuntu:22.04',
      gpuType: 'NVIDIA L40S',
      gpuCount: 1,
    });
    const mark = logMark();
    await stack
      .cluster()
      .create(
        resources.gpuPod,
        NS,
        manifests.gpuPod('drifter', { image: 'ubuntu:24.04' }, { annotations: { [EXTERNAL_ID]: made.id } }),
      );
    const drifted = await stack
      .cluster()
      .waitFor(resources.gpuPod, NS, 'drifter', syncedReason('Drifted'), 'Drifted');
    assert.equal(condition(drifted, 'Synced')?.status, 'False');
    assert.match(condition(drifted, 'Synced')?.message ?? '', /differs in image,/);
    assert.equal(drifted?.status?.id, made.id);
    assert.deepEqual(mutationsOf(made.id, mark), []);
    const creates = stack
      .sim()
      .calls.log()
      .slice(mark)
      .filter((call) => call.operation.endsWith('.create'));
    assert.deepEqual(creates, []);
  });

  test('a preempted spot pod with recoveryPolicy Recreate is replaced by exactly one live pod', async () => {
    await stack
      .cluster()
      .create(
        resources.gpuPod,
        NS,
        manifests.gpuPod('spotty', { isSpot: true, recoveryPolicy: 'Recreate', name: 'spotty-cloud' }),
      );
    const first = await stack.cluster().waitFor(resources.gpuPod, NS, 'spotty', isReady(), 'Ready');
    const firstId = String(first?.status?.id);
    assert.ok(stack.sim().faults.preempt(firstId), 'the simulator preempts the pod');
    const replaced = await stack
      .cluster()
      .waitFor(
        resources.gpuPod,
        NS,
        'spotty',
        (obj) => isReady()(obj) && obj?.status?.id !== firstId,
        'Ready on a replacement',
        60_000,
      );
    assert.equal(replaced?.status?.preemptions, 1);
    const live = stack
      .sim()
      .state.snapshot()
      .pods.filter((pod) => pod.name === 'spotty-cloud' && pod.status !== 'TERMINATED');
    assert.deepEqual(
      live.map((pod) => pod.id),
      [replaced?.status?.id],
    );
    await poll(
      () => stack.cluster().events(NS, 'spotty'),
      (events) => events.some((event) => event.reason === 'Preempted' && event.type === 'Warning'),
      'the Warning Preempted',
    );
  });
});
