import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { PlacementStatus } from '../../src/managed/core/status-schema.ts';
import { placementStatusSchema } from '../../src/managed/core/status-schema.ts';
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
import { poll } from '../support/until.ts';

// Placement against the simulator over HTTP and the real apiserver: the operator picks the cheapest offer
// a GpuPod accepts from the GPU search, moves to the next when the cloud refuses one for lack of room, says
// so when nothing fits, and places a spot pod's replacement again after a preemption. Each test uses GPU
// models and regions no other test here touches, since they change the simulator's pools.
const stack = useStack({
  apiKeys: [API_KEY, { key: 'placement-guarded-key', org: 'placement-guarded' }],
});
const NS = 'placement';
const KEY_NS = 'gpucloud-system';

const H100 = 'NVIDIA H100 80GB HBM3';
const A100 = 'NVIDIA A100-SXM4-80GB';
const L40S = 'NVIDIA L40S';
const A6000 = 'NVIDIA RTX A6000';
const RTX4090 = 'NVIDIA GeForce RTX 4090';

const placedPod = (name: string, spec: Record<string, unknown>) =>
  manifests.gpuPod(name, { gpuType: undefined, ...spec });

function placementOf(obj: TestObject | undefined): PlacementStatus | undefined {
  const parsed = placementStatusSchema.safeParse(obj?.status?.placement);
  return parsed.success ? parsed.data : undefined;
}

/** The simulator's pods made for `name` (the cloud name is the resource's), with their status. */
const cloudPodsNamed = (name: string) =>
  stack
    .sim()
    .state.snapshot()
    .pods.filter((pod) => pod.name === name);

async function create(name: string, spec: Record<string, unknown>): Promise<void> {
  await stack.cluster().create(resources.gpuPod, NS, placedPod(name, spec));
}

function waitFor(name: string, check: (obj: TestObject | undefined) => boolean, what: string) {
  return stack.cluster().waitFor(resources.gpuPod, NS, name, check, what, 60_000);
}

describe('placement', () => {
  // Before the operator first reads the offers: A6000 is offered in eu-west-1 only, and never as spot in
  // the catalogue; here it gets a spot price.
  before(() => void stack.sim().market.set(A6000, { spot: 0.45 }));
  const operator = useOperator(stack, [NS, KEY_NS]);

  test('the cheapest of three acceptable types is chosen; with it full, the next, with an Event', async () => {
    // us-east-1 has all three: H100 2.99, A100 1.89, L40S 0.99 per GPU-hour on demand.
    const types = { gpuTypes: [H100, A100, L40S] };
    await create('cheapest', { regions: ['us-east-1'], placement: types });
    const first = await waitFor('cheapest', isReady('Running'), 'Running');
    const placed = placementOf(first);
    assert.equal(placed?.gpuType, L40S);
    assert.equal(placed?.region, 'us-east-1');
    assert.equal(placed?.spot, false);
    assert.equal(placed?.pricePerGpuHour, '0.9900');
    assert.equal(placed?.chargedPerGpuHour, '0.9900', 'the price the cloud charges, read from the pod');
    assert.equal(first?.status?.gpuType, L40S, 'the printer column reads the type the pod runs on');
    const [pod] = cloudPodsNamed('cheapest');
    assert.equal(pod?.gpuType, L40S);

    // The L40S pool fills up while the operator's offers (read less than 30 s ago) still show room: the
    // create is refused, and the pod moves on to A100.
    stack.sim().capacity.setTotal('us-east-1', L40S, 1);
    await create('next', { regions: ['us-east-1'], placement: types });
    const second = await waitFor('next', isReady('Running'), 'Running');
    assert.equal(placementOf(second)?.gpuType, A100);
    assert.deepEqual(
      placementOf(second)?.attempts?.map((attempt) => `${attempt.gpuType} ${attempt.outcome}`),
      [`${L40S} NoCapacity`],
    );
    // Events are posted from the recorder's queue after the status write: wait for the one expected.
    const moved = await poll(
      async () =>
        (await stack.cluster().events(NS, 'next')).filter((event) => event.reason === 'PlacementMoved'),
      (found) => found.length > 0,
      'the PlacementMoved event',
    );
    assert.equal(moved.length, 1);
    assert.match(
      moved[0]?.message ?? '',
      /NVIDIA L40S on-demand in us-east-1 .* has no room .* trying NVIDIA A100/,
    );
    assert.deepEqual(
      cloudPodsNamed('next').map((each) => each.gpuType),
      [A100],
      'one cloud pod: the refused create made nothing',
    );
    // A running pod stays put: a cheaper offer appearing, or its acceptable set changing, moves nothing.
    stack.sim().capacity.setTotal('us-east-1', L40S, 10);
    const patched = await stack
      .cluster()
      .patch(resources.gpuPod, NS, 'next', { spec: { placement: { gpuTypes: [L40S] } } });
    await waitFor(
      'next',
      (obj) => obj?.status?.observedGeneration === patched.metadata.generation,
      'the new generation observed',
    );
    const after = await waitFor('next', isReady('Running'), 'Running');
    assert.equal(
      condition(after, 'Synced')?.status,
      'True',
      'no drift: the pod is compared with its placement',
    );
    assert.equal(placementOf(after)?.gpuType, A100);
    assert.deepEqual(
      cloudPodsNamed('next').map((each) => each.gpuType),
      [A100],
    );
  });

  test('with no offer under the cap, nothing is created and the condition says why; a higher cap creates', async () => {
    // H100 is 2.99 on demand in eu-west-1.
    await create('too-dear', {
      regions: ['eu-west-1'],
      placement: { gpuTypes: [H100], maxPricePerGpuHour: 2 },
    });
    const refused = await waitFor(
      'too-dear',
      (obj) => condition(obj, 'Synced')?.reason === 'NoOfferWithinPrice',
      'Synced=False NoOfferWithinPrice',
    );
    assert.match(
      condition(refused, 'Synced')?.message ?? '',
      /no offer of 1 × \(NVIDIA H100 80GB HBM3\), spot Never in eu-west-1 is within maxPricePerGpuHour 2 USD \(the cheapest with room is 2\.99\)/,
    );
    // Looked at again, after the refusal, by a reconcile that began after it.
    const key = { controller: 'gpupod', namespace: NS, name: 'too-dear' };
    let touches = 0;
    await reconciledAfter(operator(), key, () =>
      stack.cluster().patch(resources.gpuPod, NS, 'too-dear', {
        metadata: { annotations: { 'placement.test/touch': String(++touches) } },
      }),
    );
    assert.equal(cloudPodsNamed('too-dear').length, 0, 'nothing is created');
    await stack.cluster().patch(resources.gpuPod, NS, 'too-dear', {
      spec: { placement: { gpuTypes: [H100], maxPricePerGpuHour: 3 } },
    });
    const running = await waitFor('too-dear', isReady('Running'), 'Running');
    assert.equal(placementOf(running)?.pricePerGpuHour, '2.9900');
  });

  test('spot preferred comes back on demand after a preemption with Recreate, never two live at once', async () => {
    await create('spotty', {
      regions: ['eu-west-1'],
      placement: { gpuTypes: [A6000], spot: 'Preferred' },
      recoveryPolicy: 'Recreate',
    });
    const first = await waitFor('spotty', isReady('Running'), 'Running');
    assert.equal(placementOf(first)?.spot, true);
    assert.equal(placementOf(first)?.pricePerGpuHour, '0.4500');

    let mostLive = 0;
    const watching = { on: true };
    const watch = (async () => {
      while (watching.on) {
        const live = cloudPodsNamed('spotty').filter(
          (pod) => pod.status !== 'TERMINATED' && pod.status !== 'TERMINATING',
        ).length;
        mostLive = Math.max(mostLive, live);
        await sleep(5);
      }
    })();
    try {
      // The spot pool empties as the cloud takes the pod back.
      stack.sim().capacity.setSpotTotal('eu-west-1', A6000, 0);
      const [spotPod] = cloudPodsNamed('spotty');
      assert.ok(spotPod && stack.sim().faults.preempt(spotPod.id));
      const replaced = await waitFor(
        'spotty',
        (obj) => isReady('Running')(obj) && placementOf(obj)?.spot === false,
        'Running again, on demand',
      );
      const placed = placementOf(replaced);
      assert.equal(placed?.gpuType, A6000);
      assert.equal(placed?.pricePerGpuHour, '0.7900');
      assert.deepEqual(
        placed?.attempts?.map((attempt) => `${attempt.spot ? 'spot' : 'on-demand'} ${attempt.outcome}`),
        ['spot Preempted'],
      );
      assert.equal(replaced?.status?.preemptions, 1);
    } finally {
      watching.on = false;
      await watch;
    }
    assert.equal(mostLive, 1, 'the preempted pod is deleted before its replacement is made');
    const pods = cloudPodsNamed('spotty');
    assert.deepEqual(pods.map((pod) => `${pod.isSpot ? 'spot' : 'on-demand'} ${pod.status}`).toSorted(), [
      'on-demand RUNNING',
      'spot TERMINATED',
    ]);
  });

  test('a placed VM: the cheapest VM type of its GPU count, and the next when the cloud has no room', async () => {
    // ap-southeast-1: L40S 0.99, A100 1.89 per GPU-hour on demand; VM types of 2 GPUs.
    const placement = { gpuTypes: [A100, L40S], gpuCount: 2, regions: ['ap-southeast-1'] };
    const vm = (name: string) => ({
      apiVersion: 'gpucloud.io/v1alpha1',
      kind: 'GpuVm',
      metadata: { name },
      spec: { placement },
    });
    await stack.cluster().create(resources.gpuVm, NS, vm('vm-cheapest'));
    const first = await stack
      .cluster()
      .waitFor(resources.gpuVm, NS, 'vm-cheapest', isReady('Running'), 'Running', 60_000);
    assert.deepEqual(
      [placementOf(first)?.gpuType, placementOf(first)?.pricePerGpuHour, first?.status?.region],
      [L40S, '0.9900', 'ap-southeast-1'],
    );
    const vms = () => stack.sim().state.snapshot().vms;
    assert.deepEqual(
      vms()
        .filter((each) => each.name === 'vm-cheapest')
        .map((each) => [each.gpuType, each.gpuCount, each.isSpot]),
      [[L40S, 2, false]],
    );
    stack.sim().capacity.setTotal('ap-southeast-1', L40S, 2);
    await stack.cluster().create(resources.gpuVm, NS, vm('vm-next'));
    const second = await stack
      .cluster()
      .waitFor(resources.gpuVm, NS, 'vm-next', isReady('Running'), 'Running', 60_000);
    assert.equal(placementOf(second)?.gpuType, A100);
    assert.deepEqual(
      placementOf(second)?.attempts?.map((attempt) => `${attempt.gpuType} ${attempt.outcome}`),
      [`${L40S} NoCapacity`],
    );
    assert.equal(condition(second, 'Synced')?.status, 'True', 'no drift: compared with its placement');
  });

  test('a pod that fails before it runs is deleted and placed again on the next offer', async () => {
    // ap-southeast-1: the 4090 (0.69) takes the create, but its pods never start there; A100 (1.89) does.
    stack.sim().capacity.setStartFailures('ap-southeast-1', RTX4090, true);
    await create('no-start', { regions: ['ap-southeast-1'], placement: { gpuTypes: [RTX4090, A100] } });
    const running = await waitFor(
      'no-start',
      (obj) => isReady('Running')(obj) && placementOf(obj)?.gpuType === A100,
      'Running on A100',
    );
    assert.deepEqual(
      placementOf(running)?.attempts?.map((attempt) => `${attempt.gpuType} ${attempt.outcome}`),
      [`${RTX4090} FailedToStart`],
    );
    const events = await poll(
      () => stack.cluster().events(NS, 'no-start'),
      (events) =>
        events.some(
          (event) => event.reason === 'FailedToStart' && /failed before it ran/.test(event.message ?? ''),
        ),
      'the FailedToStart event',
    );
    assert.ok(
      !events.some((event) => event.reason === 'ExternalResourceGone'),
      'its own delete is no surprise',
    );
    assert.deepEqual(
      cloudPodsNamed('no-start')
        .map((pod) => `${pod.gpuType} ${pod.status}`)
        .toSorted(),
      [`${A100} RUNNING`, `${RTX4090} TERMINATED`],
    );
    stack.sim().capacity.setStartFailures('ap-southeast-1', RTX4090, false);
  });

  test("every type a pod accepts must pass the account's allow-list; memory-only placement keeps to it", async () => {
    const cluster = stack.cluster();
    const account = 'placement-guarded';
    await cluster.create(resources.secret, KEY_NS, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: `${account}-key` },
      stringData: { 'api-key': 'placement-guarded-key' },
    });
    await cluster.create(resources.providerConfig, '', {
      apiVersion: 'gpucloud.io/v1alpha1',
      kind: 'ProviderConfig',
      metadata: { name: account },
      spec: {
        apiUrl: stack.sim().url,
        credentials: { secretRef: { namespace: KEY_NS, name: `${account}-key`, key: 'api-key' } },
        namespaces: { names: [NS] },
        guardrails: { gpuTypes: [RTX4090] },
      },
    });
    await cluster.waitFor(resources.providerConfig, '', account, isReady('KeyAccepted'), 'Ready');
    const ref = { providerConfigRef: { name: account } };
    await create('not-allowed', { ...ref, placement: { gpuTypes: [RTX4090, H100] } });
    const refused = await waitFor(
      'not-allowed',
      (obj) => condition(obj, 'Synced')?.reason === 'GuardrailExceeded',
      'refused by the allow-list',
    );
    assert.match(
      condition(refused, 'Synced')?.message ?? '',
      /GPU type NVIDIA H100 80GB HBM3 is not allowed/,
    );

    // Any model with 20 GB or more: the cheapest is the 4090 at 0.69 anyway; with 40 GB, L40S (0.99) and
    // A6000 (0.79) are cheaper than anything allowed, and only the 4090 is: nothing fits.
    await create('by-memory', { ...ref, minSingleCardVramInGb: 20, placement: { spot: 'Never' } });
    const running = await waitFor('by-memory', isReady('Running'), 'Running');
    assert.equal(placementOf(running)?.gpuType, RTX4090);
    await create('too-big', { ...ref, minSingleCardVramInGb: 40, placement: { spot: 'Never' } });
    const none = await waitFor(
      'too-big',
      (obj) => condition(obj, 'Synced')?.reason === 'NoOfferWithinPrice',
      'nothing the account allows fits',
    );
    assert.match(condition(none, 'Synced')?.message ?? '', /is of a GPU type the provider config allows/);
    const org = stack
      .sim()
      .state.snapshot()
      .pods.filter((pod) => pod.org === account);
    assert.deepEqual(
      org.map((pod) => pod.gpuType),
      [RTX4090],
    );
  });
});
