// The GpuPod adapter (src/resources/gpu-pod/adapter.ts) on its own: what it plans, how cloud state reads as
// status, what it reports as drift, what late initialisation takes from a pod, and what its create sends.
// Cloud calls go through a real client to the simulator; pure functions get pod objects the simulator made,
// changed one field at a time.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CloudApiError } from '../../src/api/errors.ts';
import { POD_STATUSES } from '../../src/api/schemas/pods.ts';
import { OWNER_ENV } from '../../src/managed/core/annotations.ts';
import { ReconcileError } from '../../src/managed/core/errors.ts';
import { type ExternalKind, meteringOf } from '../../src/managed/core/external-kind.ts';
import { MANAGED_SPEC_FIELDS } from '../../src/resources/common/schema.ts';
import { gpuPodAdapter } from '../../src/resources/gpu-pod/adapter.ts';
import type { PodView } from '../../src/resources/gpu-pod/details.ts';
import { type GpuPodSpec, GpuPodSpecSchema } from '../../src/resources/gpu-pod/schema.ts';
import {
  actContext,
  assertRequestCarries,
  type Cloud,
  camel,
  lateInitialised,
  lateInitialisedFields,
  resource,
  STEP_MS,
  spy,
  startCloud,
  stepOf,
  watchedFields,
} from './adapter-support.ts';

const GPU = 'NVIDIA L40S';
const CALLBACK = 'http://127.0.0.1:9/pod-events';

const podSpec = (raw: Record<string, unknown> = {}): GpuPodSpec =>
  GpuPodSpecSchema.parse({ image: 'ghcr.io/acme/trainer:1', gpuType: GPU, gpuCount: 1, ...raw });

const pod = (spec: GpuPodSpec, status?: { phase?: string }) => resource('GpuPod', spec, {}, status);

describe('GpuPod adapter', () => {
  let cloud: Cloud;
  let adapter: ExternalKind<GpuPodSpec, PodView>;
  /** A running pod as a get shows it, made by the adapter from `baseSpec`. */
  let running: PodView;
  const baseSpec = podSpec({ regions: ['us-east-1'], expose: [{ port: 8888 }] });
  const baseMr = pod(baseSpec);

  /** A pod the adapter creates for `mr`, once the cloud has started it. */
  const created = async (mr = pod(podSpec())): Promise<PodView> => {
    const made = await adapter.create(mr, actContext(mr));
    cloud.step();
    return (await adapter.get(made.id)) as PodView;
  };
  const listed = async (id: string) => (await adapter.list()).find((item) => item.id === id) as PodView;

  before(async () => {
    cloud = await startCloud();
    adapter = gpuPodAdapter(cloud.client, { callbackUrl: CALLBACK });
    running = await created(baseMr);
    assert.equal(running.status, 'RUNNING');
  });
  after(() => cloud?.stop());

  describe('plan', () => {
    it('waits, changing nothing, while the cloud moves the pod on its own, whatever the spec asks', async () => {
      for (const status of ['INITIALIZING', 'PAUSING', 'TERMINATING']) {
        for (const paused of [true, false, undefined]) {
          const plan = await adapter.plan(
            pod(podSpec({ paused })),
            { ...running, status },
            actContext(baseMr),
          );
          assert.deepEqual(plan, { kind: 'wait', reason: status }, `${status}, paused: ${paused}`);
        }
      }
    });

    it('pauses a running pod the spec asks paused, with one pause call for that pod', async () => {
      const mr = pod(podSpec({ paused: true }));
      const target = await created(mr);
      const step = stepOf(await adapter.plan(mr, target, actContext(mr)));
      assert.equal(step.reason, 'Pausing');
      assert.match(step.describe, new RegExp(`\\b${target.id}\\b`));
      const pauses = cloud.callsOf('pods.pause');
      await step.run();
      assert.equal(cloud.callsOf('pods.pause'), pauses + 1);
      const pausing = (await adapter.get(target.id)) as PodView;
      assert.equal(pausing.status, 'PAUSING');
      assert.equal((await adapter.plan(mr, pausing, actContext(mr))).kind, 'wait');
      cloud.step();
      const paused = (await adapter.get(target.id)) as PodView;
      assert.equal(paused.status, 'PAUSED');
      assert.deepEqual(await adapter.plan(mr, paused, actContext(mr)), { kind: 'in-sync' });
    });

    it('resumes a paused pod the spec asks running, and waits while it starts', async () => {
      const mr = pod(podSpec({ paused: false }));
      const target = await created(mr);
      await cloud.client.pods.pause(target.id);
      cloud.step();
      const paused = (await adapter.get(target.id)) as PodView;
      assert.equal(paused.status, 'PAUSED');
      const step = stepOf(await adapter.plan(mr, paused, actContext(mr)));
      assert.equal(step.reason, 'Resuming');
      assert.match(step.describe, new RegExp(`\\b${target.id}\\b`));
      await step.run();
      const resuming = (await adapter.get(target.id)) as PodView;
      assert.equal(resuming.status, 'INITIALIZING');
      assert.deepEqual(await adapter.plan(mr, resuming, actContext(mr)), {
        kind: 'wait',
        reason: 'INITIALIZING',
      });
      cloud.step();
      const back = (await adapter.get(target.id)) as PodView;
      assert.deepEqual(await adapter.plan(mr, back, actContext(mr)), { kind: 'in-sync' });
    });

    it('leaves the pod as the cloud has it when paused is left out, or when it already is as asked', async () => {
      const cases: Array<[boolean | undefined, string]> = [
        [undefined, 'RUNNING'],
        [undefined, 'PAUSED'],
        [true, 'PAUSED'],
        [false, 'RUNNING'],
      ];
      for (const [paused, status] of cases) {
        const plan = await adapter.plan(pod(podSpec({ paused })), { ...running, status }, actContext(baseMr));
        assert.deepEqual(plan, { kind: 'in-sync' }, `${status}, paused: ${paused}`);
      }
    });

    it('neither pauses nor resumes a broken pod: the cloud pauses only a running one and resumes only a paused one', async () => {
      for (const status of ['FAILED', 'DEGRADED']) {
        for (const paused of [true, false, undefined]) {
          const plan = await adapter.plan(
            pod(podSpec({ paused })),
            { ...running, status },
            actContext(baseMr),
          );
          assert.deepEqual(plan, { kind: 'in-sync' }, `${status}, paused: ${paused}`);
        }
      }
    });
  });

  describe('readiness', () => {
    it('reads each cloud status as its own reason; only RUNNING is Ready, only FAILED and DEGRADED are broken', () => {
      for (const status of POD_STATUSES) {
        const readiness = adapter.observe(pod(podSpec()), { ...running, status }).readiness;
        assert.equal(readiness.ready, status === 'RUNNING', status);
        assert.equal(readiness.reason, camel(status), status);
        assert.equal(readiness.broken === true, status === 'FAILED' || status === 'DEGRADED', status);
        assert.ok(readiness.message.length > 0, status);
        assert.equal(adapter.phaseOf({ ...running, status }), status);
      }
    });

    it('a pod paused as the spec asks is Ready, reason Paused; paused by someone else it is not', () => {
      const asked = adapter.observe(pod(podSpec({ paused: true })), {
        ...running,
        status: 'PAUSED',
      }).readiness;
      assert.equal(asked.ready, true);
      assert.equal(asked.reason, 'Paused');
      for (const paused of [false, undefined]) {
        const other = adapter.observe(pod(podSpec({ paused })), { ...running, status: 'PAUSED' }).readiness;
        assert.equal(other.ready, false, `paused: ${paused}`);
        assert.equal(other.reason, 'Paused');
      }
    });

    it('a running pod the spec asks paused is not Ready yet: Pausing', () => {
      const readiness = adapter.observe(pod(podSpec({ paused: true })), running).readiness;
      assert.deepEqual([readiness.ready, readiness.reason], [false, 'Pausing']);
    });

    it('a pod starting after it was paused reads Resuming; a new pod starting reads Initializing', () => {
      const starting = { ...running, status: 'INITIALIZING' };
      const resumed = adapter.observe(
        pod(podSpec({ paused: false }), { phase: 'PAUSED' }),
        starting,
      ).readiness;
      assert.deepEqual([resumed.ready, resumed.reason], [false, 'Resuming']);
      for (const mr of [pod(podSpec({ paused: false })), pod(podSpec(), { phase: 'PAUSED' })]) {
        const fresh = adapter.observe(mr, starting).readiness;
        assert.deepEqual([fresh.ready, fresh.reason], [false, 'Initializing']);
      }
    });

    it('a status the operator does not know is not Ready and says which, without failing', () => {
      const readiness = adapter.observe(pod(podSpec()), { ...running, status: 'HIBERNATING' }).readiness;
      assert.equal(readiness.ready, false);
      assert.equal(readiness.reason, 'UnknownPhase');
      assert.match(readiness.message, /HIBERNATING/);
      assert.notEqual(readiness.broken, true);
    });
  });

  describe('drift', () => {
    it('a pod made from its spec has none, seen by a get or by the list', async () => {
      const spec = podSpec({
        name: 'drift-free',
        imageRegistry: 'ghcr.io',
        isSpot: true,
        containerVolumeInGb: 60,
        regions: ['eu-west-1', 'us-east-1'],
        gpuCount: 2,
      });
      const mr = pod(spec);
      const made = await created(mr);
      assert.deepEqual(adapter.observe(mr, made).drift, []);
      assert.deepEqual(adapter.observe(mr, await listed(made.id)).drift, []);
    });

    it('a pod whose spec allows any region (regions: []) is not drifted', async () => {
      const mr = pod(podSpec({ regions: [] }));
      const made = await created(mr);
      assert.deepEqual(adapter.observe(mr, made).drift, []);
    });

    it('reports each field the pod cannot change, alone, when the pod differs from the spec', () => {
      const spec = podSpec({
        name: running.name,
        image: running.image,
        imageRegistry: running.imageRegistry,
        gpuType: running.gpuType,
        gpuCount: running.gpuCount,
        isSpot: running.isSpot,
        containerVolumeInGb: running.containerVolumeInGb,
        regions: [running.region],
      });
      const mr = pod(spec);
      assert.deepEqual(adapter.observe(mr, running).drift, []);
      const differing: Array<[string, Partial<PodView>]> = [
        ['name', { name: 'renamed-in-the-cloud' }],
        ['image', { image: 'ghcr.io/acme/other:2' }],
        ['imageRegistry', { imageRegistry: 'quay.io' }],
        ['gpuType', { gpuType: 'NVIDIA H100 80GB HBM3' }],
        ['gpuCount', { gpuCount: running.gpuCount * 2 }],
        ['isSpot', { isSpot: !running.isSpot }],
        ['containerVolumeInGb', { containerVolumeInGb: running.containerVolumeInGb + 10 }],
        ['regions', { region: 'ap-southeast-1' }],
      ];
      for (const [field, change] of differing) {
        assert.deepEqual(adapter.observe(mr, { ...running, ...change }).drift, [field], field);
      }
    });

    it('the name compared is metadata.name when the spec leaves it out', () => {
      const mr = resource('GpuPod', podSpec(), { name: running.name });
      assert.deepEqual(adapter.observe(mr, running).drift, []);
      assert.deepEqual(
        adapter.observe({ ...mr, metadata: { ...mr.metadata, name: 'other' } }, running).drift,
        ['name'],
      );
    });

    it('fields the spec leaves out are the cloud’s to pick, and what the operator changes (paused) is not drift', () => {
      const mr = pod(podSpec({ name: running.name, image: running.image, paused: false }));
      const picked = {
        ...running,
        status: 'PAUSED',
        imageRegistry: 'registry.example.com',
        isSpot: true,
        containerVolumeInGb: 123,
        region: 'ap-southeast-1',
        internalIp: '10.9.9.9',
      };
      assert.deepEqual(adapter.observe(mr, picked).drift, []);
    });
  });

  describe('late initialisation', () => {
    it('fills exactly the fields the schema marks late-initialised, with the pod’s values', () => {
      const from = adapter.lateInit?.from(running, podSpec()) ?? {};
      assert.deepEqual(Object.keys(from).sort(), lateInitialisedFields(GpuPodSpecSchema.shape));
      assert.equal(from.name, running.name);
      assert.equal(from.isSpot, running.isSpot);
      const spot = adapter.lateInit?.from({ ...running, isSpot: true }, podSpec());
      assert.equal(spot?.isSpot, true);
    });

    it('paused is taken from the pod’s status: paused or pausing is paused', () => {
      for (const status of POD_STATUSES) {
        const from = adapter.lateInit?.from({ ...running, status }, podSpec());
        assert.equal(from?.paused, status === 'PAUSED' || status === 'PAUSING', status);
      }
    });

    it('never fills environment variables, which a get shows and which may be secrets', async () => {
      const mr = pod(podSpec({ environmentVars: [{ key: 'TOKEN', value: 'do-not-copy' }] }));
      const made = await created(mr);
      assert.ok(
        made.environmentVars?.some((item) => item.value === 'do-not-copy'),
        'the get shows env',
      );
      const from = adapter.lateInit?.from(made, podSpec()) ?? {};
      assert.equal('environmentVars' in from, false);
      assert.doesNotMatch(JSON.stringify(from), /do-not-copy/);
    });

    it('adopting a pod changes nothing: the spec completed from it plans in-sync, shows no drift and reads Ready', async () => {
      const made = await cloud.client.pods.create({
        name: 'made-elsewhere',
        image: 'ghcr.io/acme/trainer:1',
        gpuType: GPU,
        gpuCount: 1,
        isSpot: true,
      });
      cloud.step();
      await cloud.client.pods.pause(made.id);
      cloud.step();
      const adopted = (await adapter.get(made.id)) as PodView;
      assert.equal(adopted.status, 'PAUSED');
      const lateInit = adapter.lateInit;
      assert.ok(lateInit);
      const mr = lateInitialised(pod(podSpec({ image: 'ghcr.io/acme/trainer:1' })), lateInit, adopted);
      assert.deepEqual(await adapter.plan(mr, adopted, actContext(mr)), { kind: 'in-sync' });
      assert.deepEqual(adapter.observe(mr, adopted).drift, []);
      assert.equal(adapter.observe(mr, adopted).readiness.ready, true);
    });

    it('paused removed after late initialisation takes its cleared value: the pod is resumed', async () => {
      const lateInit = adapter.lateInit;
      assert.ok(lateInit);
      const mr = pod({ ...podSpec(), ...lateInit.cleared });
      const step = stepOf(await adapter.plan(mr, { ...running, status: 'PAUSED' }, actContext(mr)));
      assert.equal(step.reason, 'Resuming');
    });
  });

  describe('statusOf', () => {
    it('shows what a get reports: placement, SSH, exposed ports, prices and creation time', () => {
      const status = adapter.observe(baseMr, running).status;
      assert.equal(status.region, running.region);
      assert.equal(status.gpuDisplayName, running.gpuDisplayName);
      assert.equal(status.cloudType, running.cloudType);
      assert.ok(running.sshCmd && running.internalIp, 'a running pod has SSH and an address');
      assert.equal(status.sshCommand, running.sshCmd);
      assert.equal(status.internalIp, running.internalIp);
      assert.equal(status.createdAt, new Date(running.createdAt).toISOString());
      assert.deepEqual(status.prices, {
        singleCard: running.singleCardPrice,
        containerVolume: running.containerVolumePrice,
        persistentVolume: running.persistentVolumePrice,
      });
      const [exposed] = running.expose ?? [];
      assert.ok(exposed);
      assert.deepEqual(status.exposedPorts, [
        {
          port: exposed.port,
          protocol: exposed.protocol,
          ingressUrl: exposed.ingressUrl,
          healthy: exposed.healthy,
          proxyPort: exposed.proxyPort ?? undefined,
          host: exposed.host,
          serviceName: undefined,
        },
      ]);
    });

    it('what the cloud gives as null or a list leaves out is absent, never null (status fields are optional, not nullable)', async () => {
      const paused = { ...running, status: 'PAUSED', sshCmd: null, internalIp: null };
      const fromGet = adapter.observe(baseMr, paused).status;
      assert.equal(fromGet.sshCommand, undefined);
      assert.equal(fromGet.internalIp, undefined);
      const fromList = adapter.observe(baseMr, await listed(running.id)).status;
      assert.equal(fromList.prices, undefined);
      assert.equal(fromList.sshCommand, undefined);
      assert.equal(fromList.exposedPorts, undefined);
      assert.equal(fromList.region, running.region);
      for (const value of [...Object.values(fromGet), ...Object.values(fromList)])
        assert.notEqual(value, null);
    });
  });

  describe('fingerprint', () => {
    it('changes exactly when a field the reconcile needs to hear of changes: status, name, internal IP, region', async () => {
      // The list is what the poller sees. Of its fields, the status drives phase, readiness and plan; the name
      // and region are compared as drift and shown; the internal IP is shown and goes to the connection
      // Secret. The others cannot change for a pod (image, GPUs, spot, volume size, creation) or are the
      // cloud's bookkeeping.
      const view = await listed(running.id);
      assert.deepEqual(watchedFields(view, adapter.fingerprint), ['internalIp', 'name', 'region', 'status']);
    });

    it('fields only a get shows (SSH, ports, prices, env) are not watched: enrich completes them', () => {
      const completed = {
        ...running,
        sshCmd: 'ssh root@elsewhere -p 2222',
        singleCardPrice: '9.9999',
        environmentVars: [],
        expose: [],
      };
      assert.equal(adapter.fingerprint(completed), adapter.fingerprint(running));
    });
  });

  it('enrich completes a listed pod with what only a get shows; a pod gone meanwhile stays as listed', async () => {
    const view = await listed(running.id);
    assert.equal(view.sshCmd, undefined, 'the list carries no SSH command');
    const completed = await adapter.enrich?.(view);
    assert.equal(completed?.sshCmd, running.sshCmd);
    assert.deepEqual(completed?.environmentVars, running.environmentVars);
    const doomed = await created();
    const doomedView = await listed(doomed.id);
    await cloud.client.pods.delete(doomed.id);
    cloud.step();
    cloud.sim.clock.advance(60 * STEP_MS);
    assert.equal(await adapter.enrich?.(doomedView), doomedView);
  });

  it('details estimate the cost from the prices a get shows; for the list’s view, from those the status keeps', async () => {
    const fromGet = await adapter.details?.fetch(running);
    assert.ok(
      Number(fromGet?.estimatedCost) > 0,
      `a pod that ran costs something: ${fromGet?.estimatedCost}`,
    );
    const view = await listed(running.id);
    assert.equal(view.singleCardPrice, undefined, 'the list carries no prices');
    const status = adapter.observe(baseMr, running).status;
    const fromList = await adapter.details?.fetch(view, status);
    assert.equal(fromList?.estimatedCost, fromGet?.estimatedCost);
  });

  it('isGone: a pod terminating or terminated is gone for good; every other status is not', async () => {
    for (const status of POD_STATUSES) {
      assert.equal(
        adapter.isGone({ ...running, status }),
        status === 'TERMINATING' || status === 'TERMINATED',
      );
    }
    const doomed = await created();
    await adapter.delete?.(doomed.id);
    assert.equal(adapter.isGone((await adapter.get(doomed.id)) as PodView), true);
    cloud.step();
    assert.equal(adapter.isGone((await adapter.get(doomed.id)) as PodView), true);
  });

  describe('owner marker', () => {
    it('markerOf reads the uid a get shows; the list shows no environment, so no marker', async () => {
      const mr = pod(podSpec());
      const made = await created(mr);
      assert.equal(adapter.identity?.markerOf?.(made), mr.metadata.uid);
      assert.equal(adapter.identity?.markerOf?.(await listed(made.id)), undefined);
      const foreign = await cloud.client.pods.create({
        name: 'no-marker',
        image: 'x:1',
        gpuType: GPU,
        gpuCount: 1,
      });
      assert.equal(adapter.identity?.markerOf?.(foreign), undefined);
    });

    it('isOwnCreate: only a pod with the resource’s name and, read by a get, its marker', async () => {
      const mr = pod(podSpec({ name: 'interrupted' }));
      const made = await created(mr);
      const view = await listed(made.id);
      assert.equal(await adapter.identity?.isOwnCreate(mr, view, actContext(mr)), true);
      const twin = resource('GpuPod', mr.spec);
      assert.equal(
        await adapter.identity?.isOwnCreate(twin, view, actContext(twin)),
        false,
        'another resource’s marker',
      );
      const renamed = pod({ ...mr.spec, name: 'another-name' });
      assert.equal(
        await adapter.identity?.isOwnCreate(renamed, view, actContext(mr)),
        false,
        'another name, whatever the marker',
      );
      const lookalike = await cloud.client.pods.create({
        name: 'interrupted',
        image: 'x:1',
        gpuType: GPU,
        gpuCount: 1,
      });
      assert.equal(
        await adapter.identity?.isOwnCreate(mr, await listed(lookalike.id), actContext(mr)),
        false,
      );
    });

    it('isOwnCreate: a pod the cloud no longer has is not the resource’s', async () => {
      const mr = pod(podSpec({ name: 'vanished' }));
      const made = await created(mr);
      const view = await listed(made.id);
      await cloud.client.pods.delete(made.id);
      cloud.step();
      cloud.sim.clock.advance(60 * STEP_MS); // past the retention of terminated pods
      assert.equal(await adapter.get(made.id), undefined);
      assert.equal(await adapter.identity?.isOwnCreate(mr, view, actContext(mr)), false);
    });
  });

  it('heldGpus: a pod holds its GPUs unless paused or terminated (docs/crd-reference.md, maxLiveGpus)', () => {
    for (const status of POD_STATUSES) {
      const held = meteringOf(adapter).heldGpus({ ...running, status, gpuCount: 4 });
      assert.equal(held, status === 'PAUSED' || status === 'TERMINATED' ? 0 : 4, status);
    }
  });

  it('a CPU pod holds no GPUs and asks for none', async () => {
    const mr = pod(podSpec({ resourceType: 'CPU', gpuType: 'CPU', gpuCount: 4 }));
    const cpu = await created(mr);
    assert.equal(meteringOf(adapter).heldGpus(cpu), 0);
    assert.equal((await meteringOf(adapter).demand(mr)).gpus, undefined);
    assert.equal(
      meteringOf(adapter).heldGpus({ ...cpu, resourceType: 'GPU' }),
      4,
      'the same pod on GPUs holds 4',
    );
  });

  it('demand: the spec’s GPU type and count, live unless paused, and the registry credential as an id string', async () => {
    const spec = podSpec({ gpuType: 'NVIDIA H100 80GB HBM3', gpuCount: 8, containerRegistryAuthId: 42 });
    // Its price is read only when a budget asks (pricing tests): not part of what is compared here.
    const { perHour: _price, ...demand } = await meteringOf(adapter).demand(pod(spec));
    assert.deepEqual(demand, {
      gpus: { types: [spec.gpuType], count: 8 },
      live: true,
      containerRegistryAuthId: '42',
    });
    assert.equal((await meteringOf(adapter).demand(pod({ ...spec, paused: true }))).live, false);
    assert.equal((await meteringOf(adapter).demand(pod({ ...spec, paused: false }))).live, true);
    assert.equal((await meteringOf(adapter).demand(pod(podSpec()))).containerRegistryAuthId, undefined);
  });

  describe('create', () => {
    const secrets = { hf: { token: 'hf_secret_value' } };
    const full = podSpec({
      name: 'full-pod',
      regions: ['us-east-1'],
      image: 'ghcr.io/acme/trainer:2',
      imageRegistry: 'ghcr.io',
      imagePublicType: 'PRIVATE',
      containerRegistryAuthId: 7,
      resourceType: 'GPU',
      gpuCount: 2,
      isSpot: true,
      maxPrice: 5,
      shmInGb: 8,
      minSingleCardRamInGb: 16,
      minSingleCardVramInGb: 24,
      minSingleCardVcpu: 4,
      containerVolumeInGb: 60,
      initializationCommand: 'nvidia-smi',
      environmentVars: [
        { key: 'MODE', value: 'train' },
        { key: 'HF_TOKEN', valueFrom: { secretKeyRef: { name: 'hf', key: 'token' } } },
      ],
      expose: [{ port: 8888 }],
      volumes: [{ id: 'vol-1', mountPath: '/data' }],
      paused: true,
      recoveryPolicy: 'Recreate',
      activeDeadlineSeconds: 3600,
      deadlineAction: 'Delete',
      idleStop: { gpuUtilizationBelowPercent: 5, forMinutes: 30 },
      pauseOnBudget: true,
      writeConnectionSecretToRef: { name: 'full-pod-conn' },
      managementPolicies: ['*'],
      deletionPolicy: 'Orphan',
      providerConfigRef: { name: 'acme' },
    });

    it('sends the spec’s cloud fields as they are; the operator’s own fields (paused, recovery, deadline, idle stop, budget pause) never', async (t) => {
      const sent = spy(t, cloud.client.pods, 'create');
      const mr = pod(full);
      await adapter.create(mr, actContext(mr, secrets));
      const [request] = sent as Array<Record<string, unknown>>;
      assert.ok(request);
      const operatorOnly = [
        ...MANAGED_SPEC_FIELDS,
        'paused',
        'recoveryPolicy',
        'activeDeadlineSeconds',
        'deadlineAction',
        'idleStop',
        'pauseOnBudget',
      ];
      assertRequestCarries(request, full, operatorOnly, ['containerRegistryAuthId', 'environmentVars']);
      assert.equal(request.containerRegistryAuthId, '7');
      assert.equal(request.callbackUrl, CALLBACK);
      assert.deepEqual(
        Object.keys(request).sort(),
        [...Object.keys(full).filter((field) => !operatorOnly.includes(field)), 'callbackUrl'].sort(),
      );
    });

    it('resolves Secret-sourced env through the context and adds the owner marker; the pod made carries both', async (t) => {
      const sent = spy(t, cloud.client.pods, 'create');
      const mr = pod({ ...full, name: 'env-pod' });
      const made = await adapter.create(mr, actContext(mr, secrets));
      const expected = [
        { key: 'MODE', value: 'train' },
        { key: 'HF_TOKEN', value: 'hf_secret_value' },
        { key: OWNER_ENV, value: mr.metadata.uid },
      ];
      assert.deepEqual((sent[0] as Record<string, unknown>).environmentVars, expected);
      const stored = (await adapter.get(made.id)) as PodView;
      for (const item of expected)
        assert.ok(stored.environmentVars?.some((env) => env.key === item.key && env.value === item.value));
      assert.equal(stored.callbackUrl, CALLBACK);
      assert.equal(stored.name, 'env-pod');
      assert.equal(stored.isSpot, true);
      assert.equal(stored.gpuCount, 2);
      assert.equal(adapter.identity?.markerOf?.(stored), mr.metadata.uid);
    });

    it('names the pod metadata.name when the spec leaves the name out, and sends no callback URL when it has none', async (t) => {
      const plain = gpuPodAdapter(cloud.client);
      const sent = spy(t, cloud.client.pods, 'create');
      const mr = resource('GpuPod', podSpec(), { name: 'named-by-metadata' });
      const made = await plain.create(mr, actContext(mr));
      assert.equal(made.name, 'named-by-metadata');
      const request = sent[0] as Record<string, unknown>;
      assert.equal(request.name, 'named-by-metadata');
      assert.equal('callbackUrl' in request, false);
      assert.deepEqual(request.environmentVars, [{ key: OWNER_ENV, value: mr.metadata.uid }]);
    });

    it('a Secret that does not exist fails the create before anything reaches the cloud', async () => {
      const mr = pod({ ...full, name: 'no-secret' });
      const creates = cloud.callsOf('pods.create');
      await assert.rejects(adapter.create(mr, actContext(mr, {})), (error: unknown) => {
        assert.ok(error instanceof ReconcileError);
        assert.equal(error.reason, 'SecretNotFound');
        assert.doesNotMatch(error.message, /hf_secret_value/);
        return true;
      });
      assert.equal(cloud.callsOf('pods.create'), creates);
    });

    it('what the cloud refuses comes back as the cloud’s error', async () => {
      const mr = pod(podSpec({ gpuType: 'NVIDIA NO-SUCH-GPU' }));
      await assert.rejects(adapter.create(mr, actContext(mr)), CloudApiError);
    });
  });
});
