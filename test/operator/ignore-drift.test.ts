import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { GpuCloudClient } from '../../src/api/client.ts';
import { EXTERNAL_ID } from '../../src/managed/core/annotations.ts';
import {
  API_KEY,
  condition,
  isReady,
  manifests,
  resources,
  type TestObject,
  useOperator,
  useStack,
} from '../support/operator.ts';
import { reconciledAfter } from '../support/reconciled.ts';

// spec.ignoreDrift against the simulator over HTTP: a field the cloud may own, changed there by someone
// else, is neither corrected nor reported; admission refuses a field the kind does not allow.
const NS = 'cloud-owned';
const stack = useStack();

const MUTATING = /\.(create|update|terminate|delete|pause|resume|start|stop|scaleWorkers)$/;
const mutationsOf = (id: string, from: number) =>
  stack
    .sim()
    .calls.log()
    .slice(from)
    .filter((call) => MUTATING.test(call.operation) && Object.values(call.params).includes(id));

const status = (obj: TestObject | undefined) => (obj?.status ?? {}) as Record<string, unknown>;
const synced = (obj: TestObject | undefined) => condition(obj, 'Synced');

describe('spec.ignoreDrift', () => {
  const operator = useOperator(stack, [NS]);
  let cloud: GpuCloudClient;
  before(() => {
    cloud = new GpuCloudClient({ baseUrl: stack.sim().url, apiKey: API_KEY });
  });
  after(async () => {
    await cloud.close();
  });

  /**
   * Waits until the resource's status shows the cloud change, then for a reconcile of it that began
   * after: one that had the change in its status when it looked, and left it be.
   */
  let touches = 0;
  async function settledAfter(
    resource: (typeof resources)[keyof typeof resources],
    name: string,
    seen: (obj: TestObject | undefined) => boolean,
  ) {
    const cluster = stack.cluster();
    await cluster.waitFor(resource, NS, name, seen, 'the cloud change seen');
    const key = { controller: resource.kind.toLowerCase(), namespace: NS, name };
    await reconciledAfter(operator(), key, () =>
      cluster.patch(resource, NS, name, {
        metadata: { annotations: { 'ignore-drift.test/touch': String(++touches) } },
      }),
    );
    return cluster.get(resource, NS, name);
  }

  test('a VM renamed in the cloud keeps its new name when the name is the cloud’s', async () => {
    const cluster = stack.cluster();
    await cluster.create(resources.gpuVm, NS, manifests.gpuVm('lab', { ignoreDrift: ['name'] }));
    const ready = await cluster.waitFor(resources.gpuVm, NS, 'lab', isReady(), 'Ready');
    const id = String(ready?.status?.id);
    const mark = stack.sim().calls.log().length;
    await cloud.vms.update(id, { name: 'renamed-by-hand' });
    const after = await settledAfter(resources.gpuVm, 'lab', (obj) => status(obj).name === 'renamed-by-hand');
    assert.deepEqual(
      mutationsOf(id, mark).map((call) => call.operation),
      ['vms.update'],
      'only the hand rename',
    );
    assert.equal(synced(after)?.status, 'True');
    assert.ok(isReady()(after));
  });

  test('a pod paused in the cloud stays paused, Ready and Synced, when paused is the cloud’s', async () => {
    const cluster = stack.cluster();
    await cluster.create(resources.gpuPod, NS, manifests.gpuPod('batch', { ignoreDrift: ['paused'] }));
    const ready = await cluster.waitFor(resources.gpuPod, NS, 'batch', isReady('Running'), 'Ready');
    const id = String(ready?.status?.id);
    const mark = stack.sim().calls.log().length;
    await cloud.pods.pause(id);
    const after = await settledAfter(resources.gpuPod, 'batch', (obj) => obj?.status?.phase === 'PAUSED');
    assert.deepEqual(
      mutationsOf(id, mark).map((call) => call.operation),
      ['pods.pause'],
    );
    assert.equal(synced(after)?.status, 'True');
    assert.ok(isReady('Paused')(after));
    // Late initialisation filled it once, as for any field: the spec still says what it said.
    assert.equal(after?.spec?.paused, false);
  });

  test('an endpoint scaled in the cloud keeps its workers when workers are the cloud’s', async () => {
    const cluster = stack.cluster();
    await cluster.create(
      resources.serverlessEndpoint,
      NS,
      manifests.serverlessEndpoint('api', { ignoreDrift: ['workers'] }),
    );
    const ready = await cluster.waitFor(resources.serverlessEndpoint, NS, 'api', isReady(), 'Ready');
    const id = String(ready?.status?.id);
    const mark = stack.sim().calls.log().length;
    await cloud.serverless.scaleWorkers(id, 3);
    const after = await settledAfter(
      resources.serverlessEndpoint,
      'api',
      (obj) => status(obj).totalWorkers === 3,
    );
    assert.deepEqual(
      mutationsOf(id, mark).map((call) => call.operation),
      ['serverless.scaleWorkers'],
    );
    assert.equal(synced(after)?.status, 'True');
  });

  test('a pod adopted with another image is not reported Drifted when image is the cloud’s', async () => {
    const made = await cloud.pods.create({
      name: 'legacy',
      image: 'ubuntu:22.04',
      gpuType: 'NVIDIA L40S',
      gpuCount: 1,
    });
    const cluster = stack.cluster();
    const body = (ignoreDrift?: string[]) =>
      manifests.gpuPod(
        'legacy',
        { image: 'ubuntu:24.04', ...(ignoreDrift ? { ignoreDrift } : {}) },
        { annotations: { [EXTERNAL_ID]: made.id } },
      );
    await cluster.create(resources.gpuPod, NS, body());
    await cluster.waitFor(
      resources.gpuPod,
      NS,
      'legacy',
      (obj) => synced(obj)?.reason === 'Drifted',
      'Drifted',
    );
    await cluster.patch(resources.gpuPod, NS, 'legacy', { spec: { ignoreDrift: ['image'] } });
    const owned = await cluster.waitFor(
      resources.gpuPod,
      NS,
      'legacy',
      (obj) => obj?.status?.observedGeneration === obj?.metadata.generation && synced(obj)?.status === 'True',
      'Synced',
    );
    assert.equal(owned?.spec?.image, 'ubuntu:24.04', 'the spec is not rewritten');
    const pod = await cloud.pods.get(made.id);
    assert.equal(pod.image, 'ubuntu:22.04');
  });

  test('admission refuses a field the kind does not let the cloud own, naming those it does', async () => {
    await assert.rejects(
      stack.cluster().create(resources.gpuPod, NS, manifests.gpuPod('wrong', { ignoreDrift: ['gpuCount'] })),
      /a GpuPod may ignore drift only in paused, name, isSpot, image, imageRegistry, containerVolumeInGb, regions/,
    );
    await assert.rejects(
      stack.cluster().create(resources.gpuVm, NS, manifests.gpuVm('wrong', { ignoreDrift: ['vmTypeId'] })),
      /a GpuVm may ignore drift only in name, isSpot, region/,
    );
  });
});
