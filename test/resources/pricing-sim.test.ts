// The pricing module against the simulator in-process (a real client over loopback HTTP): the price of a
// spec is the price the object reports once the cloud made it, for every GPU type, count and spot choice
// the cloud offers; a running object priced from its list entry is priced as its own fields say; and the
// objects the spend rate counts are those each kind's adapter counts against the live-GPU limit.

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { POD_STATUSES, type PodListItem } from '../../src/api/schemas/pods.ts';
import { ENDPOINT_STATUSES, type Endpoint } from '../../src/api/schemas/serverless.ts';
import { VM_STATUSES, type Vm } from '../../src/api/schemas/vms.ts';
import { systemClock } from '../../src/lib/clock.ts';
import { meteringOf } from '../../src/managed/core/external-kind.ts';
import { gpuPodAdapter } from '../../src/resources/gpu-pod/adapter.ts';
import type { PodView } from '../../src/resources/gpu-pod/details.ts';
import { GpuPodSpecSchema } from '../../src/resources/gpu-pod/schema.ts';
import { gpuVmAdapter } from '../../src/resources/gpu-vm/adapter.ts';
import { GpuVmSpecSchema } from '../../src/resources/gpu-vm/schema.ts';
import { gpuPodCloudPrice } from '../../src/resources/pricing/gpu-pod.ts';
import { gpuVmCloudPrice } from '../../src/resources/pricing/gpu-vm.ts';
import { offerSourceOf, type Price, PriceBook } from '../../src/resources/pricing/price-book.ts';
import { estimateSpec, heldGpusOf } from '../../src/resources/pricing/spend.ts';
import { serverlessEndpointAdapter } from '../../src/resources/serverless-endpoint/adapter.ts';
import { ServerlessEndpointSpecSchema } from '../../src/resources/serverless-endpoint/schema.ts';
import { actContext, type Cloud, resource, startCloud } from './adapter-support.ts';

function perHour(price: Price): number {
  assert.ok(price.priced, `expected a price, got ${JSON.stringify(price)}`);
  return price.perHour;
}

describe('prices against the simulated cloud', () => {
  let cloud: Cloud;
  let book: PriceBook;
  before(async () => {
    cloud = await startCloud();
    book = new PriceBook(offerSourceOf(cloud.client));
  });
  after(() => cloud.stop());

  it("a pod spec's price is the created pod's singleCardPrice × gpuCount, for every offer the cloud has", async () => {
    const offers = await Array.fromAsync(cloud.client.pods.searchGpusAll({ includeUnavailable: true }));
    let checked = 0;
    for (const offer of offers) {
      for (const { gpuCount } of offer.gpuCountOptions) {
        const spec = GpuPodSpecSchema.parse({
          image: 'ubuntu:24.04',
          gpuType: offer.gpuType,
          gpuCount,
          isSpot: offer.isSpot,
          regions: [offer.region],
        });
        const { price } = await estimateSpec(book, { kind: 'GpuPod', spec });
        const pod = await cloud.client.pods.create({
          name: `priced-${checked}`,
          image: spec.image,
          gpuType: offer.gpuType,
          gpuCount: spec.gpuCount,
          isSpot: spec.isSpot,
          regions: spec.regions,
        });
        assert.equal(
          perHour(price),
          Number(pod.singleCardPrice) * pod.gpuCount,
          `${offer.gpuType} × ${gpuCount}`,
        );
        assert.equal(price.priced && price.exactness, 'quoted');
        // Listed, with no price of its own: priced by its offer, at the same price.
        const listed = (await cloud.client.pods.list()).find((each) => each.id === pod.id) as PodListItem;
        assert.equal(perHour(await gpuPodCloudPrice(book, listed)), perHour(price));
        await cloud.client.pods.delete(pod.id);
        checked++;
      }
    }
    assert.ok(checked >= 20, `${checked} offers checked`);
  });

  it("a VM spec's price is the pricePerHour the operator writes in the VM's status, on-demand and spot", async () => {
    const adapter = gpuVmAdapter(cloud.client);
    const types = (await cloud.client.vms.types()).flatMap(({ regions }) =>
      regions.flatMap(({ region, types: items }) => items.map((item) => ({ region, item }))),
    );
    for (const [index, { region, item }] of types.slice(0, 12).entries()) {
      for (const isSpot of item.supportSpot ? [false, true] : [false]) {
        const spec = GpuVmSpecSchema.parse({ vmTypeId: item.vmTypeId, region, isSpot });
        const { price } = await estimateSpec(book, { kind: 'GpuVm', spec });
        const mr = resource('GpuVm', spec, { name: `vm-${index}-${isSpot}` });
        const vm = await adapter.create(mr, actContext(mr));
        const status = await adapter.details?.fetch(vm);
        assert.equal(perHour(price), Number(status?.pricePerHour), `type ${item.vmTypeId} spot ${isSpot}`);
        const listed = (await Array.fromAsync(cloud.client.vms.listAll())).find(
          (each) => each.id === vm.id,
        ) as Vm;
        assert.equal(
          perHour(await gpuVmCloudPrice(book, listed)),
          perHour(price),
          'priced again from its shape',
        );
      }
    }
  });

  it("an endpoint spec's price is the perHourPrice the created endpoint reports", async () => {
    for (const [workers, gpuCount] of [
      [1, 1],
      [3, 2],
      [0, 4],
    ] as const) {
      const spec = ServerlessEndpointSpecSchema.parse({
        image: 'worker:1',
        resources: [{ region: 'us-east-1', gpuType: 'NVIDIA L40S', gpuCount }],
        workers,
      });
      const { price } = await estimateSpec(book, { kind: 'ServerlessEndpoint', spec });
      const made = await cloud.client.serverless.create({
        name: `ep${workers}x${gpuCount}`,
        image: spec.image,
        resources: spec.resources,
        workers,
      });
      // The cloud gives money with 4 decimals.
      assert.equal(perHour(price).toFixed(4), made.perHourPrice, `${workers} workers of ${gpuCount} GPUs`);
    }
  });

  it('the GPUs a spec asks for are the GPUs its adapter demands of the guardrails', async () => {
    const context = { queueIntervalMs: 15_000, clock: systemClock, peers: { get: () => undefined } };
    const pod = gpuPodAdapter(cloud.client);
    const vm = gpuVmAdapter(cloud.client);
    const endpoint = serverlessEndpointAdapter(cloud.client, context);
    const pods = [
      { gpuType: 'NVIDIA L40S', gpuCount: 4 },
      { gpuType: 'NVIDIA L40S', gpuCount: 1, paused: true },
      { gpuType: 'CPU', gpuCount: 1, resourceType: 'CPU' },
    ].map((raw) => GpuPodSpecSchema.parse({ image: 'ubuntu:24.04', ...raw }));
    for (const spec of pods) {
      const estimate = await estimateSpec(book, { kind: 'GpuPod', spec });
      const demand = await meteringOf(pod).demand(resource('GpuPod', spec));
      assert.deepEqual([estimate.gpus, estimate.live], [demand.gpus, demand.live]);
    }
    const vmSpec = GpuVmSpecSchema.parse({ vmTypeId: 403, region: 'us-east-1' });
    const vmEstimate = await estimateSpec(book, { kind: 'GpuVm', spec: vmSpec });
    const vmDemand = await meteringOf(vm).demand(resource('GpuVm', vmSpec));
    assert.deepEqual([vmEstimate.gpus, vmEstimate.live], [vmDemand.gpus, vmDemand.live]);
    const endpoints = [
      { workers: 3 },
      { stopped: true },
      { serviceMode: 'QUEUE', autoscaling: { minWorkers: 1, maxWorkers: 6, targetQueuePerWorker: 2 } },
    ].map((raw) =>
      ServerlessEndpointSpecSchema.parse({
        image: 'worker:1',
        resources: [
          { region: 'us-east-1', gpuType: 'NVIDIA L40S', gpuCount: 2 },
          { region: 'eu-west-1', gpuType: 'NVIDIA GeForce RTX 4090', gpuCount: 4 },
        ],
        ...raw,
      }),
    );
    for (const spec of endpoints) {
      const estimate = await estimateSpec(book, { kind: 'ServerlessEndpoint', spec });
      const demand = await meteringOf(endpoint).demand(resource('ServerlessEndpoint', spec));
      assert.deepEqual([estimate.gpus, estimate.live], [demand.gpus, demand.live]);
    }
  });

  it('the objects the spend rate counts are those each adapter counts against the live-GPU limit, in every status', async () => {
    const context = { queueIntervalMs: 15_000, clock: systemClock, peers: { get: () => undefined } };
    const pod = await cloud.client.pods.create({
      name: 'held',
      image: 'x',
      gpuType: 'NVIDIA L40S',
      gpuCount: 2,
    });
    const [listedPod] = (await cloud.client.pods.list()).filter((each) => each.id === pod.id);
    assert.ok(listedPod);
    for (const status of POD_STATUSES) {
      for (const resourceType of ['GPU', 'CPU', undefined] as const) {
        const view: PodView = { ...listedPod, status, ...(resourceType ? { resourceType } : {}) };
        assert.equal(
          heldGpusOf({ kind: 'GpuPod', object: view }),
          meteringOf(gpuPodAdapter(cloud.client)).heldGpus(view),
          `pod ${status} ${resourceType}`,
        );
      }
    }
    const vm = { gpuCount: 4 } as Vm;
    for (const status of VM_STATUSES) {
      assert.equal(
        heldGpusOf({ kind: 'GpuVm', object: { ...vm, status } }),
        meteringOf(gpuVmAdapter(cloud.client)).heldGpus({ ...vm, status }),
        status,
      );
    }
    const endpoint = {
      runningWorkers: 3,
      resources: [{ gpuCount: 2 }, { gpuCount: 4 }],
    } as Endpoint;
    for (const status of ENDPOINT_STATUSES) {
      const view = { ...endpoint, status };
      assert.equal(
        heldGpusOf({ kind: 'ServerlessEndpoint', object: view }),
        meteringOf(serverlessEndpointAdapter(cloud.client, context)).heldGpus(view),
        status,
      );
    }
  });
});
