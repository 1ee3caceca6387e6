// The ServerlessEndpoint adapter (src/resources/serverless-endpoint/adapter.ts) on its own: every spec field
// can change in place (update, scale, stop, start, autoscale), so what it plans is the heart of it; then how
// cloud state reads as status, late initialisation, and what its create sends. Cloud calls go through a
// real client to the simulator; pure functions get endpoint objects the simulator made, changed one field
// at a time.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ENDPOINT_STATUSES, type Endpoint } from '../../src/api/schemas/serverless.ts';
import { systemClock } from '../../src/lib/clock.ts';
import { OWNER_ENV } from '../../src/managed/core/annotations.ts';
import { type ExternalKind, meteringOf } from '../../src/managed/core/external-kind.ts';
import { IGNORE_DRIFT, MANAGED_SPEC_FIELDS } from '../../src/resources/common/schema.ts';
import { serverlessEndpointAdapter } from '../../src/resources/serverless-endpoint/adapter.ts';
import {
  type ServerlessEndpointSpec,
  ServerlessEndpointSpecSchema,
} from '../../src/resources/serverless-endpoint/schema.ts';
import {
  actContext,
  assertRequestCarries,
  type Cloud,
  camel,
  lateInitialised,
  lateInitialisedFields,
  resource,
  type Secrets,
  spy,
  startCloud,
  stepOf,
  watchedFields,
} from './adapter-support.ts';

const L40S = 'NVIDIA L40S';
const QUEUE_INTERVAL_MS = 60_000;
const noPeers = { get: () => undefined };

let names = 0;
/** A custom resource whose metadata.name is a valid endpoint name (1 to 20 characters). */
const endpointResource = (spec: ServerlessEndpointSpec, metadata = {}) =>
  resource('ServerlessEndpoint', spec, { name: `ep-${++names}`, ...metadata });

const endpointSpec = (raw: Record<string, unknown> = {}): ServerlessEndpointSpec =>
  ServerlessEndpointSpecSchema.parse({
    image: 'ghcr.io/acme/infer:1',
    resources: [{ region: 'us-east-1', gpuType: L40S, gpuCount: 1 }],
    ...raw,
  });

const secrets: Secrets = { model: { token: 'hf_first_value' } };

/** Every field the endpoint create request takes, set. */
const fullSpec = (name: string) =>
  endpointSpec({
    name,
    imageRegistry: 'ghcr.io',
    minSingleCardVramInGb: 24,
    minSingleCardVcpu: 4,
    minSingleCardRamInGb: 32,
    workers: 1,
    credentialId: 5,
    containerVolumeInGb: 40,
    initializationCommand: 'echo hello',
    envVars: [
      { key: 'MODE', value: 'serve' },
      { key: 'HF_TOKEN', valueFrom: { secretKeyRef: { name: 'model', key: 'token' } } },
    ],
    expose: { port: 8000 },
    serviceMode: 'QUEUE',
    webhook: 'https://hooks.example.com/a',
  });

describe('ServerlessEndpoint adapter', () => {
  let cloud: Cloud;
  let adapter: ExternalKind<ServerlessEndpointSpec, Endpoint>;
  /** A running endpoint made by the adapter from a full spec. */
  let running: Endpoint;
  let runningMr: ReturnType<typeof endpointResource>;

  const fresh = async (id: string) => {
    const endpoint = await adapter.get(id);
    assert.ok(endpoint, `endpoint ${id} exists`);
    return endpoint;
  };
  const created = async (
    mr = endpointResource(endpointSpec()),
    from: Secrets = secrets,
  ): Promise<Endpoint> => {
    const made = await adapter.create(mr, actContext(mr, from));
    cloud.step();
    return fresh(made.id);
  };
  const plan = (mr: ReturnType<typeof endpointResource>, endpoint: Endpoint, from: Secrets = secrets) =>
    adapter.plan(mr, endpoint, actContext(mr, from));

  before(async () => {
    cloud = await startCloud();
    adapter = serverlessEndpointAdapter(cloud.client, {
      queueIntervalMs: QUEUE_INTERVAL_MS,
      clock: systemClock,
      peers: noPeers,
    });
    runningMr = endpointResource(fullSpec('base'));
    running = await created(runningMr);
    assert.equal(running.status, 'RUNNING');
  });
  after(() => cloud?.stop());

  describe('plan', () => {
    it('waits, changing nothing, while the cloud starts or stops the endpoint, whatever the spec asks', async () => {
      const differing = endpointResource({ ...fullSpec('another'), workers: 5, stopped: true });
      for (const status of ['INITIALIZING', 'STOPPING']) {
        assert.deepEqual(await plan(differing, { ...running, status }), { kind: 'wait', reason: status });
      }
    });

    it('an endpoint made from its spec is in sync: env from Secrets, the credential id, lists and the port compare equal', async () => {
      assert.deepEqual(await plan(runningMr, running), { kind: 'in-sync' });
    });

    it('updates each changed field in place with a patch of that field alone, after which it is in sync', async (t) => {
      const patches = spy(t, cloud.client.serverless, 'update');
      const mr = endpointResource(fullSpec('updated'));
      let endpoint = await created(mr);
      let spec = mr.spec;
      const changes: Array<[string, Record<string, unknown>, unknown]> = [
        ['name', { name: 'renamed' }, 'renamed'],
        ['imageRegistry', { imageRegistry: 'quay.io' }, 'quay.io'],
        ['image', { image: 'ghcr.io/acme/infer:2' }, 'ghcr.io/acme/infer:2'],
        [
          'resources',
          {
            resources: [...spec.resources, { region: 'ap-southeast-1', gpuType: L40S, gpuCount: 1 }],
          },
          [...spec.resources, { region: 'ap-southeast-1', gpuType: L40S, gpuCount: 1 }],
        ],
        ['minSingleCardVramInGb', { minSingleCardVramInGb: 40 }, 40],
        ['minSingleCardVcpu', { minSingleCardVcpu: 8 }, 8],
        ['minSingleCardRamInGb', { minSingleCardRamInGb: 48 }, 48],
        ['credentialId', { credentialId: 6 }, '6'],
        ['containerVolumeInGb', { containerVolumeInGb: 80 }, 80],
        ['initializationCommand', { initializationCommand: 'echo bye' }, 'echo bye'],
        [
          'envVars',
          { envVars: [{ key: 'MODE', value: 'batch' }] },
          [
            { key: 'MODE', value: 'batch' },
            { key: OWNER_ENV, value: mr.metadata.uid },
          ],
        ],
        ['expose', { expose: { port: 9000, protocol: 'http' } }, { port: 9000, protocol: 'http' }],
        ['serviceMode', { serviceMode: 'ALB' }, 'ALB'],
        ['webhook', { webhook: 'https://hooks.example.com/b' }, 'https://hooks.example.com/b'],
      ];
      // Every cloud field of the spec is here; workers, stopped and autoscaling have steps of their own.
      const own = ['workers', 'stopped', 'autoscaling', IGNORE_DRIFT, ...MANAGED_SPEC_FIELDS];
      const cloudFields = Object.keys(ServerlessEndpointSpecSchema.shape).filter(
        (field) => !own.includes(field),
      );
      assert.deepEqual(changes.map(([field]) => field).sort(), cloudFields.sort());
      for (const [field, change, sent] of changes) {
        spec = { ...spec, ...change };
        const changed = { ...mr, spec };
        const step = stepOf(await plan(changed, endpoint));
        assert.equal(step.reason, 'Updating', field);
        assert.match(step.describe, new RegExp(`${endpoint.id}: ${field}$`));
        await step.run();
        assert.deepEqual(patches.at(-1), [endpoint.id, { [field]: sent }], field);
        endpoint = await fresh(endpoint.id);
        assert.deepEqual(await plan(changed, endpoint), { kind: 'in-sync' }, `${field} once updated`);
      }
      assert.equal(endpoint.name, 'renamed');
    });

    it('changes to several fields go in one patch', async () => {
      const mr = endpointResource(fullSpec('several'));
      const endpoint = await created(mr);
      const changed = { ...mr, spec: { ...mr.spec, image: 'ghcr.io/acme/infer:3', containerVolumeInGb: 90 } };
      const step = stepOf(await plan(changed, endpoint));
      assert.match(step.describe, /: image, containerVolumeInGb$/);
      await step.run();
      const updated = await fresh(endpoint.id);
      assert.deepEqual([updated.image, updated.containerVolumeInGb], ['ghcr.io/acme/infer:3', 90]);
    });

    it('env and resources compare as sets: the same items in another order are in sync', async () => {
      const mr = endpointResource(
        endpointSpec({
          envVars: [
            { key: 'A', value: '1' },
            { key: 'B', value: '2' },
          ],
          resources: [
            { region: 'us-east-1', gpuType: L40S, gpuCount: 1 },
            { region: 'ap-southeast-1', gpuType: L40S, gpuCount: 1 },
          ],
        }),
      );
      const endpoint = await created(mr);
      const reordered = {
        ...mr,
        spec: {
          ...mr.spec,
          envVars: [...(mr.spec.envVars ?? [])].reverse(),
          resources: [...mr.spec.resources].reverse(),
        },
      };
      assert.deepEqual(await plan(reordered, endpoint), { kind: 'in-sync' });
    });

    it('a Secret whose value changed updates the env with the new value', async () => {
      const mr = endpointResource(fullSpec('rotating'));
      const own = await created(mr);
      assert.deepEqual(await plan(mr, own), { kind: 'in-sync' });
      const rotated = { model: { token: 'hf_second_value' } };
      const step = stepOf(await plan(mr, own, rotated));
      assert.match(step.describe, /: envVars$/);
      await step.run();
      const env = (await fresh(own.id)).environmentVars;
      assert.ok(env.some((item) => item.key === 'HF_TOKEN' && item.value === 'hf_second_value'));
      assert.equal(
        env.some((item) => item.value === 'hf_first_value'),
        false,
      );
    });

    it('an adopted endpoint keeps its own env while the spec names none: never copied, never emptied', async () => {
      const made = await cloud.client.serverless.create({
        name: 'adopted-env',
        image: 'ghcr.io/acme/infer:1',
        resources: [{ region: 'us-east-1', gpuType: L40S, gpuCount: 1 }],
        envVars: [{ key: 'THEIR_SECRET', value: 'theirs' }],
      });
      cloud.step();
      const adopted = await fresh(made.id);
      const lateInit = adapter.lateInit;
      assert.ok(lateInit);
      const mr = lateInitialised(endpointResource(endpointSpec()), lateInit, adopted);
      assert.equal(mr.spec.envVars, undefined);
      assert.deepEqual(await plan(mr, adopted), { kind: 'in-sync' });
    });

    it('an endpoint the operator made carries its marker: env removed from the spec leaves only the marker', async () => {
      const mr = endpointResource(endpointSpec({ envVars: [{ key: 'A', value: '1' }] }));
      const endpoint = await created(mr);
      const withoutEnv = { ...mr, spec: { ...mr.spec, envVars: undefined } };
      const step = stepOf(await plan(withoutEnv, endpoint));
      await step.run();
      assert.deepEqual((await fresh(endpoint.id)).environmentVars, [
        { key: OWNER_ENV, value: mr.metadata.uid },
      ]);
    });

    it('scales to spec.workers with one scale call; an update goes first, one step per plan', async (t) => {
      const scaled = spy(t, cloud.client.serverless, 'scaleWorkers');
      const mr = endpointResource(endpointSpec({ workers: 1 }));
      const endpoint = await created(mr);
      const wanted = { ...mr, spec: { ...mr.spec, workers: 3, image: 'ghcr.io/acme/infer:4' } };
      const update = stepOf(await plan(wanted, endpoint));
      assert.equal(update.reason, 'Updating');
      assert.doesNotMatch(update.describe, /workers/);
      await update.run();
      const scale = stepOf(await plan(wanted, await fresh(endpoint.id)));
      assert.equal(scale.reason, 'Scaling');
      assert.match(scale.describe, new RegExp(`${endpoint.id} from 1 to 3 workers`));
      await scale.run();
      assert.deepEqual(scaled, [[endpoint.id, 3]]);
      const after = await fresh(endpoint.id);
      assert.equal(after.totalWorkers, 3);
      assert.deepEqual(await plan(wanted, after), { kind: 'in-sync' });
      const left = { ...mr, spec: { ...mr.spec, workers: undefined, image: 'ghcr.io/acme/infer:4' } };
      assert.deepEqual(
        await plan(left, after),
        { kind: 'in-sync' },
        'workers left out: as the cloud has them',
      );
    });

    it('stops a running endpoint the spec asks stopped, waits while it stops, and starts it once asked again', async () => {
      const mr = endpointResource(endpointSpec({ stopped: true }));
      const endpoint = await created(mr);
      assert.equal(endpoint.status, 'RUNNING', 'a new endpoint starts, whatever stopped says');
      const stop = stepOf(await plan(mr, endpoint));
      assert.equal(stop.reason, 'Stopping');
      await stop.run();
      const stopping = await fresh(endpoint.id);
      assert.equal(stopping.status, 'STOPPING');
      assert.equal((await plan(mr, stopping)).kind, 'wait');
      cloud.step();
      const stopped = await fresh(endpoint.id);
      assert.equal(stopped.status, 'STOPPED');
      assert.deepEqual(await plan(mr, stopped), { kind: 'in-sync' });
      const left = { ...mr, spec: { ...mr.spec, stopped: undefined } };
      assert.deepEqual(
        await plan(left, stopped),
        { kind: 'in-sync' },
        'stopped left out: as the cloud has it',
      );
      const lateInit = adapter.lateInit;
      assert.ok(lateInit);
      const cleared = { ...mr, spec: { ...mr.spec, stopped: lateInit.cleared.stopped } };
      const start = stepOf(await plan(cleared, stopped));
      assert.equal(start.reason, 'Starting');
      await start.run();
      assert.equal((await fresh(endpoint.id)).status, 'INITIALIZING');
      assert.deepEqual(await plan(left, { ...stopped, status: 'RUNNING' }), { kind: 'in-sync' });
    });

    describe('autoscaling', () => {
      const autoscaling = { minWorkers: 1, maxWorkers: 4, targetQueuePerWorker: 1 };

      it('scales on the tasks in flight, reading the counts at most once per interval, and shows its decision', async (t) => {
        const own = serverlessEndpointAdapter(cloud.client, {
          queueIntervalMs: QUEUE_INTERVAL_MS,
          clock: systemClock,
          peers: noPeers,
        });
        const sent = spy(t, cloud.client.serverless, 'create');
        const mr = endpointResource(endpointSpec({ serviceMode: 'QUEUE', autoscaling }));
        const made = await own.create(mr, actContext(mr));
        assert.equal(
          (sent[0] as { workers: number }).workers,
          autoscaling.minWorkers,
          'created at its minimum',
        );
        cloud.step();
        for (let i = 0; i < 3; i++) await cloud.client.serverless.tasks.submit(made.id, { input: { i } });
        const counts = cloud.callsOf('serverless.tasks.count');
        const endpoint = await fresh(made.id);
        const step = stepOf(await own.plan(mr, endpoint, actContext(mr)));
        assert.equal(step.reason, 'Autoscaling');
        assert.match(step.describe, /from 1 to 3 workers \(ScaleUp: 3 tasks in flight\)/);
        assert.deepEqual(own.observe(mr, endpoint).status.autoscaling, {
          desiredWorkers: 3,
          reason: 'ScaleUp',
          queue: 3,
        });
        await step.run();
        const scaled = await fresh(made.id);
        assert.equal(scaled.totalWorkers, 3);
        assert.deepEqual(await own.plan(mr, scaled, actContext(mr)), { kind: 'in-sync' });
        assert.deepEqual(own.observe(mr, scaled).status.autoscaling, {
          desiredWorkers: 3,
          reason: 'Steady',
          queue: 3,
        });
        assert.equal(
          cloud.callsOf('serverless.tasks.count'),
          counts + 1,
          'one read of the counts per interval',
        );
        assert.equal(own.revisit?.afterMs(mr), QUEUE_INTERVAL_MS);
        await own.delete?.(made.id);
        assert.equal(
          own.observe(mr, scaled).status.autoscaling,
          undefined,
          'a deleted endpoint’s decision is forgotten',
        );
      });

      it('leaves alone an endpoint without autoscaling, stopped or not running, without reading its queue', async () => {
        const plain = endpointResource(endpointSpec({ serviceMode: 'QUEUE' }));
        const endpoint = await created(plain);
        await cloud.client.serverless.tasks.submit(endpoint.id, { input: {} });
        await cloud.client.serverless.tasks.submit(endpoint.id, { input: {} });
        const counts = cloud.callsOf('serverless.tasks.count');
        assert.deepEqual(await plan(plain, endpoint), { kind: 'in-sync' });
        const autoscaled = { ...plain, spec: { ...plain.spec, autoscaling } };
        const stopped = { ...autoscaled, spec: { ...autoscaled.spec, stopped: true } };
        assert.deepEqual(await plan(stopped, { ...endpoint, status: 'STOPPED' }), { kind: 'in-sync' });
        assert.deepEqual(await plan(autoscaled, { ...endpoint, status: 'FAILED' }), { kind: 'in-sync' });
        assert.equal(cloud.callsOf('serverless.tasks.count'), counts);
        assert.equal(adapter.revisit?.afterMs(plain), undefined);
      });
    });
  });

  describe('readiness', () => {
    it('reads each cloud status as its own reason; only RUNNING is Ready, only FAILED is broken', () => {
      for (const status of ENDPOINT_STATUSES) {
        const readiness = adapter.observe(endpointResource(endpointSpec()), { ...running, status }).readiness;
        assert.equal(readiness.ready, status === 'RUNNING', status);
        assert.equal(readiness.reason, camel(status), status);
        assert.equal(readiness.broken === true, status === 'FAILED', status);
        assert.equal(adapter.phaseOf({ ...running, status }), status);
      }
    });

    it('an endpoint stopped as the spec asks is Ready, reason Stopped; running while asked stopped, it is Stopping', () => {
      const asked = endpointResource(endpointSpec({ stopped: true }));
      const stopped = adapter.observe(asked, { ...running, status: 'STOPPED' }).readiness;
      assert.deepEqual([stopped.ready, stopped.reason], [true, 'Stopped']);
      const stopping = adapter.observe(asked, running).readiness;
      assert.deepEqual([stopping.ready, stopping.reason], [false, 'Stopping']);
      for (const wanted of [false, undefined]) {
        const other = adapter.observe(endpointResource(endpointSpec({ stopped: wanted })), {
          ...running,
          status: 'STOPPED',
        }).readiness;
        assert.deepEqual([other.ready, other.reason], [false, 'Stopped']);
      }
    });

    it('a status the operator does not know is not Ready and says which', () => {
      const readiness = adapter.observe(endpointResource(endpointSpec()), {
        ...running,
        status: 'SCALING',
      }).readiness;
      assert.deepEqual([readiness.ready, readiness.reason], [false, 'UnknownPhase']);
      assert.match(readiness.message, /SCALING/);
    });
  });

  it('drift: none, since the cloud can change every field in place (the update test covers each)', () => {
    const other = endpointResource(endpointSpec({ name: 'other', workers: running.totalWorkers + 1 }));
    assert.deepEqual(adapter.observe(other, running).drift, []);
  });

  describe('late initialisation', () => {
    it('fills exactly the fields the schema marks late-initialised, with the endpoint’s values', () => {
      const from = adapter.lateInit?.from(running, endpointSpec()) ?? {};
      assert.deepEqual(Object.keys(from).sort(), lateInitialisedFields(ServerlessEndpointSpecSchema.shape));
      assert.deepEqual(from, {
        name: running.name,
        imageRegistry: running.imageRegistry,
        minSingleCardVramInGb: running.minSingleCardVramInGb,
        minSingleCardVcpu: running.minSingleCardVcpu,
        minSingleCardRamInGb: running.minSingleCardRamInGb,
        workers: running.totalWorkers,
        credentialId: Number(running.credentialId),
        containerVolumeInGb: running.containerVolumeInGb,
        initializationCommand: running.initializationCommand,
        expose: running.expose,
        serviceMode: running.serviceMode,
        webhook: running.webhook,
        stopped: false,
      });
      // The values are the ones the spec was made with: adopting the endpoint would not change it.
      for (const [field, value] of Object.entries(from)) {
        const specValue = (runningMr.spec as Record<string, unknown>)[field];
        if (field !== 'name' && field !== 'stopped') assert.deepEqual(value, specValue, field);
      }
    });

    it('what the endpoint has none of is not filled: no credential, port or webhook, a service mode the spec does not know', () => {
      const bare = { ...running, credentialId: null, expose: null, webhook: null, serviceMode: 'GRPC' };
      const from = adapter.lateInit?.from(bare, endpointSpec()) ?? {};
      for (const field of ['credentialId', 'expose', 'webhook', 'serviceMode'] as const) {
        assert.equal(from[field], undefined, field);
      }
    });

    it('workers are the autoscaler’s when the spec autoscales: not filled', () => {
      const autoscaled = endpointSpec({
        serviceMode: 'QUEUE',
        autoscaling: { minWorkers: 0, maxWorkers: 2, targetQueuePerWorker: 1 },
      });
      assert.equal(adapter.lateInit?.from(running, autoscaled).workers, undefined);
    });

    it('stopped is taken from the status: stopped or stopping is stopped', () => {
      for (const status of ENDPOINT_STATUSES) {
        const from = adapter.lateInit?.from({ ...running, status }, endpointSpec());
        assert.equal(from?.stopped, status === 'STOPPED' || status === 'STOPPING', status);
      }
    });

    it('never fills env, which the endpoint shows and which may hold secrets', () => {
      assert.ok(running.environmentVars.some((item) => item.value === 'hf_first_value'));
      const from = adapter.lateInit?.from(running, endpointSpec()) ?? {};
      assert.equal('envVars' in from, false);
      assert.doesNotMatch(JSON.stringify(from), /hf_first_value/);
    });

    it('adopting an endpoint changes nothing: the spec completed from it plans in-sync and reads Ready', async () => {
      const made = await cloud.client.serverless.create({
        name: 'adopted',
        image: 'ghcr.io/acme/infer:1',
        imageRegistry: 'ghcr.io',
        resources: [{ region: 'us-east-1', gpuType: L40S, gpuCount: 2 }],
        workers: 2,
        credentialId: '9',
        minSingleCardVcpu: 2,
        initializationCommand: 'make warm',
        expose: { port: 8080, protocol: 'http' },
        serviceMode: 'ALB',
        webhook: 'https://hooks.example.com/adopted',
      });
      cloud.step();
      const adopted = await fresh(made.id);
      const lateInit = adapter.lateInit;
      assert.ok(lateInit);
      const mr = lateInitialised(
        endpointResource(endpointSpec({ resources: [{ region: 'us-east-1', gpuType: L40S, gpuCount: 2 }] })),
        lateInit,
        adopted,
      );
      assert.deepEqual(await plan(mr, adopted), { kind: 'in-sync' });
      assert.equal(adapter.observe(mr, adopted).readiness.ready, true);
    });

    it('the cleared values are what clears each field in the cloud: a patch with them, then in sync', async (t) => {
      const patches = spy(t, cloud.client.serverless, 'update');
      const lateInit = adapter.lateInit;
      assert.ok(lateInit);
      const mr = endpointResource(fullSpec('clearing'));
      const endpoint = await created(mr);
      const {
        imageRegistry,
        minSingleCardVramInGb,
        minSingleCardVcpu,
        minSingleCardRamInGb,
        initializationCommand,
        ...kept
      } = mr.spec;
      const removed = { ...mr, spec: { ...lateInit.cleared, ...kept } as ServerlessEndpointSpec };
      const step = stepOf(await plan(removed, endpoint));
      await step.run();
      const { stopped: _startsInstead, ...patched } = lateInit.cleared;
      assert.deepEqual(patches, [[endpoint.id, patched]]);
      const cleared = await fresh(endpoint.id);
      assert.deepEqual(
        [cleared.imageRegistry, cleared.minSingleCardVramInGb, cleared.initializationCommand],
        ['', 0, ''],
      );
      assert.deepEqual(await plan(removed, cleared), { kind: 'in-sync' });
    });
  });

  describe('statusOf', () => {
    it('shows the name, domain and workers, the workers again as replicas, and a selector naming the endpoint', () => {
      const status = adapter.observe(runningMr, running).status;
      assert.ok(running.domain, 'a running endpoint has a domain');
      assert.deepEqual(status, {
        name: running.name,
        domain: running.domain,
        totalWorkers: running.totalWorkers,
        runningWorkers: running.runningWorkers,
        replicas: running.totalWorkers,
        selector: `gpucloud.io/endpoint-id=${running.id}`,
        autoscaling: undefined,
      });
    });

    it('an endpoint with no domain yet shows none, never null', async () => {
      const made = await adapter.create(endpointResource(endpointSpec()), actContext(runningMr));
      assert.equal(made.domain, null);
      assert.equal(adapter.observe(runningMr, made).status.domain, undefined);
    });
  });

  describe('fingerprint', () => {
    it('watches every field but the cost and prices, which move every second while workers run', () => {
      const moving = ['cost', 'perHourPrice', 'perSecondPrice'];
      assert.deepEqual(
        watchedFields(running, adapter.fingerprint),
        Object.keys(running)
          .filter((field) => !moving.includes(field))
          .sort(),
      );
    });

    it('an hour of a running endpoint changes its cost, not its fingerprint', async () => {
      const before = await fresh(running.id);
      cloud.sim.clock.advance(3_600_000);
      const later = await fresh(running.id);
      assert.notEqual(later.cost, before.cost);
      assert.equal(adapter.fingerprint(later), adapter.fingerprint(before));
    });
  });

  it('isGone: never, the cloud has no terminated endpoints; a deleted one is simply not found', async () => {
    for (const status of ENDPOINT_STATUSES) assert.equal(adapter.isGone({ ...running, status }), false);
    const doomed = await created();
    await adapter.delete?.(doomed.id);
    assert.equal(await adapter.get(doomed.id), undefined);
    await adapter.delete?.(doomed.id); // deleting what is gone succeeds
  });

  it('get: the listed endpoint with that id, with everything the list carries', async () => {
    const got = await fresh(running.id);
    assert.equal(got.id, running.id);
    assert.deepEqual(got.environmentVars, running.environmentVars);
    assert.equal(await adapter.get('987654321'), undefined);
  });

  describe('owner marker', () => {
    it('markerOf reads the uid the endpoint’s env carries; an endpoint made elsewhere has none', async () => {
      assert.equal(adapter.identity?.markerOf?.(running), runningMr.metadata.uid);
      const foreign = await cloud.client.serverless.create({
        name: 'foreign',
        image: 'x:1',
        resources: [{ region: 'us-east-1', gpuType: L40S, gpuCount: 1 }],
      });
      assert.equal(adapter.identity?.markerOf?.(await fresh(foreign.id)), undefined);
    });

    it('isOwnCreate: only an endpoint whose marker names this resource', async () => {
      assert.equal(await adapter.identity?.isOwnCreate(runningMr, running, actContext(runningMr)), true);
      const twin = endpointResource(runningMr.spec);
      assert.equal(await adapter.identity?.isOwnCreate(twin, running, actContext(twin)), false);
      const unmarked = {
        ...running,
        environmentVars: running.environmentVars.filter((item) => item.key !== OWNER_ENV),
      };
      assert.equal(await adapter.identity?.isOwnCreate(runningMr, unmarked, actContext(runningMr)), false);
    });

    it('the endpoint object has no creation time: every candidate counts as made after the intent', () => {
      assert.equal(adapter.createdAtOf(running), Number.POSITIVE_INFINITY);
    });
  });

  it('heldGpus: from its create on, its workers (asked for, or more running) hold their resource’s GPUs; none once STOPPED', () => {
    const resources = [
      { ...running.resources[0], gpuCount: 1 },
      { ...running.resources[0], region: 'ap-southeast-1', gpuCount: 4 },
    ] as Endpoint['resources'];
    for (const status of ENDPOINT_STATUSES) {
      const held = meteringOf(adapter).heldGpus({
        ...running,
        status,
        resources,
        runningWorkers: 3,
        totalWorkers: 5,
      });
      assert.equal(held, status === 'STOPPED' ? 0 : 5 * 4, status);
    }
    for (const [runningWorkers, totalWorkers, expected] of [
      [0, 2, 2 * 4],
      [3, 2, 3 * 4],
      [0, 0, 0],
    ] as const) {
      const endpoint = {
        ...running,
        status: 'INITIALIZING' as const,
        resources,
        runningWorkers,
        totalWorkers,
      };
      assert.equal(
        meteringOf(adapter).heldGpus(endpoint),
        expected,
        `${runningWorkers} running of ${totalWorkers}`,
      );
    }
  });

  it('demand: workers (or the autoscaler’s most, or 1) times the largest GPU count, live unless stopped', async () => {
    const resources = [
      { region: 'us-east-1', gpuType: L40S, gpuCount: 2 },
      { region: 'us-east-1', gpuType: 'NVIDIA H100 80GB HBM3', gpuCount: 4 },
    ];
    const types = [L40S, 'NVIDIA H100 80GB HBM3'];
    const demand = (raw: Record<string, unknown>) =>
      meteringOf(adapter).demand(endpointResource(endpointSpec({ resources, ...raw })));
    const { perHour: _price, ...three } = await demand({ workers: 3, credentialId: 12 });
    assert.deepEqual(three, {
      gpus: { types, count: 12 },
      live: true,
      credentialId: '12',
    });
    const autoscaling = { minWorkers: 0, maxWorkers: 5, targetQueuePerWorker: 1 };
    assert.equal((await demand({ serviceMode: 'QUEUE', autoscaling })).gpus?.count, 20);
    assert.equal((await demand({})).gpus?.count, 4);
    assert.equal((await demand({ workers: 0 })).gpus?.count, 0);
    assert.equal((await demand({ stopped: true })).live, false);
    assert.equal((await demand({})).credentialId, undefined);
  });

  describe('create', () => {
    it('sends the spec’s cloud fields; never the operator’s own, stopped or autoscaling', async (t) => {
      const sent = spy(t, cloud.client.serverless, 'create');
      const spec = {
        ...fullSpec('full'),
        stopped: true,
        writeConnectionSecretToRef: { name: 'full-conn' },
        managementPolicies: ['*'],
        deletionPolicy: 'Orphan',
        providerConfigRef: { name: 'acme' },
      } as ServerlessEndpointSpec;
      const mr = endpointResource(spec);
      await adapter.create(mr, actContext(mr, secrets));
      const request = sent[0] as Record<string, unknown>;
      const operatorOnly = [...MANAGED_SPEC_FIELDS, 'stopped'];
      assertRequestCarries(request, spec, operatorOnly, ['credentialId', 'envVars']);
      assert.equal(request.credentialId, '5');
      assert.deepEqual(
        Object.keys(request).sort(),
        Object.keys(spec)
          .filter((field) => !operatorOnly.includes(field))
          .sort(),
      );
    });

    it('resolves Secret-sourced env through the context and adds the owner marker; the endpoint made carries both', async (t) => {
      const sent = spy(t, cloud.client.serverless, 'create');
      const mr = endpointResource(fullSpec('with-env'));
      const made = await adapter.create(mr, actContext(mr, secrets));
      const expected = [
        { key: 'MODE', value: 'serve' },
        { key: 'HF_TOKEN', value: 'hf_first_value' },
        { key: OWNER_ENV, value: mr.metadata.uid },
      ];
      assert.deepEqual((sent[0] as Record<string, unknown>).envVars, expected);
      assert.deepEqual((await fresh(made.id)).environmentVars, expected);
    });

    it('names the endpoint metadata.name and starts one worker when the spec says neither', async (t) => {
      const sent = spy(t, cloud.client.serverless, 'create');
      const mr = endpointResource(endpointSpec(), { name: 'by-metadata' });
      const made = await adapter.create(mr, actContext(mr));
      assert.deepEqual(sent, [
        {
          image: mr.spec.image,
          resources: mr.spec.resources,
          name: 'by-metadata',
          workers: 1,
          envVars: [{ key: OWNER_ENV, value: mr.metadata.uid }],
        },
      ]);
      assert.deepEqual([made.name, made.totalWorkers], ['by-metadata', 1]);
    });

    it('an autoscaled endpoint starts with its minimum of workers, autoscaling itself not sent', async (t) => {
      const sent = spy(t, cloud.client.serverless, 'create');
      const mr = endpointResource(
        endpointSpec({
          serviceMode: 'QUEUE',
          autoscaling: { minWorkers: 0, maxWorkers: 3, targetQueuePerWorker: 2 },
        }),
      );
      await adapter.create(mr, actContext(mr));
      const request = sent[0] as Record<string, unknown>;
      assert.equal(request.workers, 0);
      assert.equal('autoscaling' in request, false);
    });

    it('a Secret key that does not exist fails the create before anything reaches the cloud', async () => {
      const mr = endpointResource(fullSpec('no-key'));
      const creates = cloud.callsOf('serverless.create');
      await assert.rejects(adapter.create(mr, actContext(mr, { model: {} })), {
        reason: 'SecretKeyNotFound',
      });
      assert.equal(cloud.callsOf('serverless.create'), creates);
    });
  });
});
