import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { z } from 'zod';
import { GpuCloudClient } from '../../src/api/client.ts';
import { objectPath } from '../../src/kube/resource-type.ts';
import { FINALIZER } from '../../src/managed/core/annotations.ts';
import {
  API_KEY,
  cloudObjects,
  condition,
  isReady,
  manifests,
  resources,
  useOperator,
  useStack,
} from '../support/operator.ts';

const NS = 'machines';
const stack = useStack();

const readyWith = isReady;
const gpuVm = manifests.gpuVm;
const endpoint = manifests.serverlessEndpoint;
const cloudVms = (name: string) => cloudObjects(stack.sim()).vms(name);
const cloudEndpoints = (name: string) => cloudObjects(stack.sim()).endpoints(name);

describe('GpuVm and ServerlessEndpoint lifecycles', () => {
  useOperator(stack, [NS]);

  test('a VM is created, renamed in place when spec.name changes, and terminated on deletion', async () => {
    const cluster = stack.cluster();
    await cluster.create(resources.gpuVm, NS, gpuVm('dev-box'));
    const ready = await cluster.waitFor(resources.gpuVm, NS, 'dev-box', readyWith('Running'), 'Ready');
    assert.equal(cloudVms('dev-box').length, 1);
    assert.notEqual((ready?.status as Record<string, unknown> | undefined)?.ipAddress, undefined);

    await cluster.patch(resources.gpuVm, NS, 'dev-box', { spec: { name: 'alice-box' } });
    await cluster.waitFor(
      resources.gpuVm,
      NS,
      'dev-box',
      (obj) => (obj?.status as Record<string, unknown> | undefined)?.name === 'alice-box',
      'renamed',
    );
    const [renamed] = cloudVms('alice-box');
    assert.equal(renamed?.id, ready?.status?.id, 'the same VM, renamed');

    await cluster.delete(resources.gpuVm, NS, 'dev-box');
    await cluster.waitFor(resources.gpuVm, NS, 'dev-box', (obj) => obj === undefined, 'gone');
    assert.ok(['TERMINATING', 'TERMINATED'].includes(String(cloudVms('alice-box')[0]?.status)));
  });

  test('a spot VM without isSpot in its manifest is made on demand, and shows its price and estimated cost', async () => {
    const cluster = stack.cluster();
    const { isSpot: _spot, ...spec } = gpuVm('priced').spec;
    await cluster.create(resources.gpuVm, NS, { ...gpuVm('priced'), spec });
    const priced = await cluster.waitFor(
      resources.gpuVm,
      NS,
      'priced',
      (obj) => isReady()(obj) && obj?.status?.estimatedCost !== undefined,
      'Ready with a cost',
    );
    assert.equal(priced?.spec?.isSpot, false, 'late-initialised from the VM the create made');
    const client = new GpuCloudClient({ baseUrl: stack.sim().url, apiKey: API_KEY });
    try {
      const listed = (await client.vms.types())
        .flatMap(({ regions }) =>
          regions.flatMap(({ region, types }) => types.map((type) => ({ region, type }))),
        )
        .find(({ region, type }) => region === 'us-east-1' && type.vmTypeId === 401);
      assert.equal(priced?.status?.pricePerHour, listed?.type.pricePerHour);
      assert.equal(priced?.status?.currency, listed?.type.currency);
      // The cost so far: above nothing once it has run a few seconds, and no more than the hourly price
      // over the time since the resource was made (its VM is younger).
      const costed = await cluster.waitFor(
        resources.gpuVm,
        NS,
        'priced',
        (obj) => Number(obj?.status?.estimatedCost) > 0,
        'a cost above 0',
      );
      const made = Date.parse(String(costed?.metadata.creationTimestamp));
      const most = ((Date.now() - made) / 3_600_000) * Number(listed?.type.pricePerHour);
      const cost = Number(costed?.status?.estimatedCost);
      assert.ok(cost <= most + 0.00005, `${cost} USD within ${most} USD`);
    } finally {
      await client.close();
    }
  });

  test('a key without terminate permission is a terminal PermissionDenied that keeps the finalizer until it is granted', async () => {
    const cluster = stack.cluster();
    await cluster.create(resources.gpuVm, NS, gpuVm('locked'));
    await cluster.waitFor(resources.gpuVm, NS, 'locked', readyWith('Running'), 'Ready');
    stack.sim().faults.setTerminatePermission(API_KEY, false);
    try {
      await cluster.delete(resources.gpuVm, NS, 'locked');
      const refused = await cluster.waitFor(
        resources.gpuVm,
        NS,
        'locked',
        (obj) => condition(obj, 'Synced')?.reason === 'PermissionDenied',
        'PermissionDenied',
      );
      assert.deepEqual(
        refused?.metadata.finalizers,
        [FINALIZER],
        'the finalizer holds: deleting the CR must not leak the VM',
      );
      assert.equal(cloudVms('locked')[0]?.status, 'RUNNING');
    } finally {
      stack.sim().faults.setTerminatePermission(API_KEY, true);
    }
    await cluster.patch(resources.gpuVm, NS, 'locked', { metadata: { annotations: { nudge: '1' } } });
    await cluster.waitFor(
      resources.gpuVm,
      NS,
      'locked',
      (obj) => obj === undefined,
      'deleted once permitted',
    );
    assert.ok(['TERMINATING', 'TERMINATED'].includes(String(cloudVms('locked')[0]?.status)));
  });

  test('an endpoint is created, updated in place, scaled, stopped, started and deleted', async () => {
    const cluster = stack.cluster();
    await cluster.create(resources.serverlessEndpoint, NS, endpoint('infer'));
    const ready = await cluster.waitFor(
      resources.serverlessEndpoint,
      NS,
      'infer',
      readyWith('Running'),
      'Ready',
    );
    const id = ready?.status?.id;
    assert.equal(cloudEndpoints('infer').length, 1);

    await cluster.patch(resources.serverlessEndpoint, NS, 'infer', { spec: { workers: 3 } });
    await cluster.waitFor(
      resources.serverlessEndpoint,
      NS,
      'infer',
      (obj) => (obj?.status as Record<string, unknown> | undefined)?.replicas === 3,
      'scaled to 3',
    );
    assert.equal(cloudEndpoints('infer')[0]?.totalWorkers, 3);
    // The scale subresource carries a selector that names the endpoint: what an HPA needs to scale it.
    const scale = await cluster.client.request(
      z.object({ status: z.object({ replicas: z.number(), selector: z.string() }) }),
      {
        method: 'GET',
        path: `${objectPath(resources.serverlessEndpoint, { namespace: NS, name: 'infer' })}/scale`,
      },
    );
    assert.deepEqual(scale.status, { replicas: 3, selector: `gpucloud.io/endpoint-id=${id}` });

    await cluster.patch(resources.serverlessEndpoint, NS, 'infer', {
      spec: { image: 'vllm/vllm-openai:v0.6.1' },
    });
    await cluster.waitFor(
      resources.serverlessEndpoint,
      NS,
      'infer',
      (obj) =>
        obj?.status?.observedGeneration === obj?.metadata.generation &&
        condition(obj, 'Synced')?.status === 'True',
      'updated',
    );
    const api = new GpuCloudClient({ baseUrl: stack.sim().url, apiKey: API_KEY });
    const cloud = (await api.serverless.list()).find((e) => e.id === id);
    await api.close();
    assert.equal(cloud?.image, 'vllm/vllm-openai:v0.6.1', 'the image was patched in place');
    assert.equal(cloudEndpoints('infer').length, 1, 'updated, not recreated');

    await cluster.patch(resources.serverlessEndpoint, NS, 'infer', { spec: { stopped: true } });
    await cluster.waitFor(
      resources.serverlessEndpoint,
      NS,
      'infer',
      (obj) => obj?.status?.phase === 'STOPPED' && readyWith('Stopped')(obj),
      'stopped',
    );
    await cluster.patch(resources.serverlessEndpoint, NS, 'infer', { spec: { stopped: false } });
    await cluster.waitFor(resources.serverlessEndpoint, NS, 'infer', readyWith('Running'), 'running again');

    await cluster.delete(resources.serverlessEndpoint, NS, 'infer');
    await cluster.waitFor(resources.serverlessEndpoint, NS, 'infer', (obj) => obj === undefined, 'gone');
    assert.equal(cloudEndpoints('infer').length, 0, 'deleted in the cloud');
  });
});
