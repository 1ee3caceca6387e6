import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { z } from 'zod';
import { GpuCloudClient } from '../../src/api/client.ts';
import { isStatus } from '../../src/kube/client.ts';
import { collectionPath, objectPath } from '../../src/kube/resource-type.ts';
import { EXTERNAL_ID, FINALIZER } from '../../src/managed/core/annotations.ts';
import { eventually } from '../support/eventually.ts';
import { clientAs, grantTenant } from '../support/impersonation.ts';
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
import { until } from '../support/until.ts';

// Two teams with a cloud account each (two organisations in the simulator) beside the operator's own
// default account, on the real apiserver and the simulator over HTTP.
const KEYS = {
  teamA: 'team-a-key-one',
  teamA2: 'team-a-key-two',
  teamB: 'team-b-key-one',
  teamC: 'team-c-key-one',
  teamD: 'team-d-key-one',
  teamE: 'team-e-key-one',
  teamF: 'team-f-key-one',
  teamG: 'team-g-key-one',
  teamH: 'team-h-key-one',
};
const stack = useStack({
  apiKeys: [
    API_KEY,
    { key: KEYS.teamA, org: 'team-a' },
    { key: KEYS.teamB, org: 'team-b' },
    { key: KEYS.teamC, org: 'team-c' },
    { key: KEYS.teamD, org: 'team-d' },
    { key: KEYS.teamE, org: 'team-e' },
    { key: KEYS.teamF, org: 'team-f' },
    { key: KEYS.teamG, org: 'team-g' },
    { key: KEYS.teamH, org: 'team-h' },
  ],
});
const KEY_NS = 'gpucloud-system';
const TENANT_B = 'tenant-b';
// Reconciles at a time per kind: --concurrency (src/operator/config.ts), 16 by default, given here so that
// the burst below runs more reconciles at once than its account has room for.
const CONCURRENCY = 16;
let operator: RunningOperator;

/** Reconciles of `resource` the operator logged as failed for `reason`: one line each, repeats included. */
function refusals(resource: string, reason: string): number {
  return operator.logs.filter((text) => {
    const line = JSON.parse(text) as { resource?: string; reason?: string };
    return line.resource === resource && line.reason === reason;
  }).length;
}

const synced = (reason: string) => (obj: TestObject | undefined) =>
  condition(obj, 'Synced')?.reason === reason;
/** API calls the simulator has answered for `operation`, over every account. */
const callsTo = (operation: string) => stack.sim().calls.snapshot().byOperation[operation] ?? 0;
/** For a cleanup that may find the object already gone. */
const absent = (error: unknown) => {
  if (!isStatus(error, 404)) throw error;
};
const podsNamed = (name: string) =>
  stack
    .sim()
    .state.snapshot()
    .pods.filter((pod) => pod.name === name);

async function keySecret(name: string, key: string): Promise<void> {
  const body = { apiVersion: 'v1', kind: 'Secret', metadata: { name }, stringData: { 'api-key': key } };
  await stack.cluster().create(resources.secret, KEY_NS, body);
}

function providerConfig(name: string, spec: Record<string, unknown>) {
  return {
    apiVersion: 'gpucloud.io/v1alpha1',
    kind: 'ProviderConfig',
    metadata: { name },
    spec: {
      apiUrl: stack.sim().url,
      credentials: { secretRef: { namespace: KEY_NS, name: `${name}-key`, key: 'api-key' } },
      ...spec,
    },
  };
}

const account = (name: string) => ({ providerConfigRef: { name } });

describe('cloud accounts per team', () => {
  before(async () => {
    const cluster = stack.cluster();
    for (const ns of [
      KEY_NS,
      'team-a',
      'team-a2',
      'team-b',
      'team-c',
      'team-d',
      'team-e',
      'team-f',
      'team-g',
      'team-h',
      'other',
    ]) {
      await cluster.ensureNamespace(ns);
    }
    await keySecret('team-a-key', KEYS.teamA);
    await keySecret('team-b-key', KEYS.teamB);
    await keySecret('team-c-key', KEYS.teamC);
    await keySecret('team-d-key', KEYS.teamD);
    await keySecret('team-e-key', KEYS.teamE);
    await keySecret('team-f-key', KEYS.teamF);
    await keySecret('team-g-key', KEYS.teamG);
    await keySecret('team-h-key', KEYS.teamH);
    // One account per limit test below, so that none of them sees another's GPUs.
    for (const [name, maxLiveGpus] of [
      ['team-e', 2],
      ['team-f', 2],
      ['team-g', 5],
      ['team-h', 2],
    ] as const) {
      await cluster.create(
        resources.providerConfig,
        '',
        providerConfig(name, { namespaces: { names: [name] }, guardrails: { maxLiveGpus } }),
      );
    }
    await cluster.create(
      resources.providerConfig,
      '',
      providerConfig('team-d', { namespaces: { names: ['team-d'] }, guardrails: { maxLiveGpus: 10 } }),
    );
    await grantTenant(cluster.client, 'team-b', TENANT_B, ['get', 'list', 'create', 'patch', 'delete']);
    // team-c lists only its own namespace, so it allows adoption there (and only there).
    await cluster.create(
      resources.providerConfig,
      '',
      providerConfig('team-c', { namespaces: { names: ['team-c'] } }),
    );
    // team-a is shared by two namespaces, so adoption is off unless it says otherwise.
    await cluster.create(
      resources.providerConfig,
      '',
      providerConfig('team-a', { namespaces: { names: ['team-a', 'team-a2'] } }),
    );
    await cluster.create(
      resources.providerConfig,
      '',
      providerConfig('team-b', {
        namespaces: { names: ['team-b'] },
        allowedContainerRegistryAuthIds: [7],
        guardrails: { gpuTypes: ['NVIDIA L40S'], maxGpusPerResource: 2, maxLiveGpus: 3 },
      }),
    );
    // A pod no resource manages, made before the operator's first list of team-b's account.
    const teamB = new GpuCloudClient({ baseUrl: stack.sim().url, apiKey: KEYS.teamB });
    await teamB.pods.create({
      name: 'unmanaged',
      image: 'ubuntu:24.04',
      gpuType: 'NVIDIA L40S',
      gpuCount: 1,
    });
    await teamB.close();
    operator = await startOperator(stack.plane(), stack.sim(), {
      flags: ['--concurrency', String(CONCURRENCY)],
    });
  });
  after(() => operator.stop());

  test('a config is Ready once the cloud accepted its key, and holds a finalizer', async () => {
    for (const name of ['team-a', 'team-b']) {
      const config = await stack
        .cluster()
        .waitFor(resources.providerConfig, '', name, isReady('KeyAccepted'), 'Ready');
      assert.ok(config?.metadata.finalizers?.includes('gpucloud.io/provider-config-in-use'));
    }
  });

  test('each resource lands in the organisation of the account it names', async () => {
    const cluster = stack.cluster();
    await cluster.create(resources.gpuPod, 'team-a', manifests.gpuPod('a-pod', account('team-a')));
    await cluster.create(resources.gpuPod, 'team-b', manifests.gpuPod('b-pod', account('team-b')));
    await cluster.create(resources.gpuPod, 'other', manifests.gpuPod('default-pod'));
    for (const [ns, name] of [
      ['team-a', 'a-pod'],
      ['team-b', 'b-pod'],
      ['other', 'default-pod'],
    ] as const) {
      await cluster.waitFor(resources.gpuPod, ns, name, isReady('Running'), 'Ready');
    }
    assert.deepEqual(
      podsNamed('a-pod').map((pod) => pod.org),
      ['team-a'],
    );
    assert.deepEqual(
      podsNamed('b-pod').map((pod) => pod.org),
      ['team-b'],
    );
    assert.deepEqual(
      podsNamed('default-pod').map((pod) => pod.org),
      ['org-1'],
    );
    const config = await cluster.waitFor(
      resources.providerConfig,
      '',
      'team-a',
      (obj) => obj?.status?.users === 1,
      'one user',
    );
    assert.equal(config?.status?.users, 1);
  });

  test('a namespace the account does not allow gets a terminal condition and no cloud call', async () => {
    const creates = () => stack.sim().calls.snapshot().byOperation['pods.create'] ?? 0;
    const before = creates();
    await stack.cluster().create(resources.gpuPod, 'other', manifests.gpuPod('intruder', account('team-a')));
    const refused = await stack
      .cluster()
      .waitFor(resources.gpuPod, 'other', 'intruder', synced('ProviderConfigNotAllowed'), 'refused');
    assert.equal(condition(refused, 'Synced')?.status, 'False');
    assert.equal(creates(), before, 'no create was sent');
    assert.deepEqual(podsNamed('intruder'), []);
  });

  test('an account shared by several namespaces refuses adoption', async () => {
    const client = new GpuCloudClient({ baseUrl: stack.sim().url, apiKey: KEYS.teamA });
    try {
      const existing = await client.pods.create({
        name: 'made-by-hand',
        image: 'ubuntu:24.04',
        gpuType: 'NVIDIA L40S',
        gpuCount: 1,
      });
      const pod = manifests.gpuPod('adopter', account('team-a'), {
        annotations: { [EXTERNAL_ID]: existing.id },
      });
      await stack.cluster().create(resources.gpuPod, 'team-a2', pod);
      const refused = await stack
        .cluster()
        .waitFor(resources.gpuPod, 'team-a2', 'adopter', synced('AdoptionNotAllowed'), 'refused');
      assert.equal(refused?.status?.id, undefined, 'nothing of the object is copied');
    } finally {
      await client.close();
    }
  });

  test('every guardrail refuses before anything is sent', async () => {
    const cluster = stack.cluster();
    const creates = () => stack.sim().calls.snapshot().byOperation['pods.create'] ?? 0;
    const before = creates();
    const refusals: Array<[string, Record<string, unknown>, string]> = [
      ['wrong-type', { gpuType: 'NVIDIA GeForce RTX 4090' }, 'GuardrailExceeded'],
      ['too-many', { gpuCount: 4 }, 'GuardrailExceeded'],
      [
        'foreign-registry',
        { containerRegistryAuthId: 8, imagePublicType: 'PRIVATE' },
        'NotAllowedByProviderConfig',
      ],
    ];
    for (const [name, spec, reason] of refusals) {
      await cluster.create(
        resources.gpuPod,
        'team-b',
        manifests.gpuPod(name, { ...spec, ...account('team-b') }),
      );
      const refused = await cluster.waitFor(resources.gpuPod, 'team-b', name, synced(reason), reason);
      assert.match(condition(refused, 'Synced')?.message ?? '', /provider config team-b/);
    }
    assert.equal(creates(), before, 'none of them was sent');
  });

  test('the live-GPU limit counts every object of the account, managed or not, and frees up', async () => {
    const cluster = stack.cluster();
    // b-pod (1 GPU) runs, and the unmanaged 1-GPU pod made before the operator started: 2 of the 3 allowed.
    const pod = manifests.gpuPod('two-more', { gpuCount: 2, ...account('team-b') });
    await cluster.create(resources.gpuPod, 'team-b', pod);
    const refused = await cluster.waitFor(
      resources.gpuPod,
      'team-b',
      'two-more',
      synced('GuardrailExceeded'),
      'refused',
    );
    assert.match(condition(refused, 'Synced')?.message ?? '', /limit of 3/);
    assert.deepEqual(podsNamed('two-more'), []);
    // Pausing b-pod frees its GPU: the refused pod goes through on a later try.
    await cluster.patch(resources.gpuPod, 'team-b', 'b-pod', { spec: { paused: true } });
    await cluster.waitFor(resources.gpuPod, 'team-b', 'two-more', isReady('Running'), 'Ready', 90_000);
  });

  test('a rotated key is picked up without a restart, and the old one is no longer needed', async () => {
    const cluster = stack.cluster();
    stack.sim().keys.add(KEYS.teamA2, 'team-a');
    await cluster.patch(resources.secret, KEY_NS, 'team-a-key', { stringData: { 'api-key': KEYS.teamA2 } });
    stack.sim().keys.revoke(KEYS.teamA);
    await cluster.create(resources.gpuPod, 'team-a', manifests.gpuPod('after-rotation', account('team-a')));
    await cluster.waitFor(resources.gpuPod, 'team-a', 'after-rotation', isReady('Running'), 'Ready');
    assert.deepEqual(
      podsNamed('after-rotation').map((pod) => pod.org),
      ['team-a'],
    );
    const config = await cluster.get(resources.providerConfig, '', 'team-a');
    assert.equal(condition(config, 'Ready')?.status, 'True');
    assert.ok(!operator.logs.some((line) => line.includes(KEYS.teamA) || line.includes(KEYS.teamA2)));
  });

  test("a tenant naming another namespace's account cannot reach its objects on any path", async () => {
    // team-c runs X, made outside the cluster; a tenant of team-b guesses its id and names team-c's
    // account, with the operator's finalizer written by hand so that a delete goes to the finalize path.
    const teamC = new GpuCloudClient({ baseUrl: stack.sim().url, apiKey: KEYS.teamC });
    const tenant = clientAs(stack.plane(), TENANT_B);
    try {
      await stack.cluster().waitFor(resources.providerConfig, '', 'team-c', isReady('KeyAccepted'), 'Ready');
      const x = await teamC.pods.create({
        name: 'x',
        image: 'ubuntu:24.04',
        gpuType: 'NVIDIA L40S',
        gpuCount: 1,
      });
      // Running before the attack starts, so that "still running" after it means untouched.
      await eventually(async () => assert.equal((await teamC.pods.get(x.id)).status, 'RUNNING'));
      const mark = stack.sim().calls.log().length;
      const body = manifests.gpuPod('grab-x', account('team-c'), {
        annotations: { [EXTERNAL_ID]: x.id },
        finalizers: [FINALIZER],
      });
      await tenant.request(z.unknown(), {
        method: 'POST',
        path: collectionPath(resources.gpuPod, 'team-b'),
        body,
      });
      const refused = await stack
        .cluster()
        .waitFor(resources.gpuPod, 'team-b', 'grab-x', synced('ProviderConfigNotAllowed'), 'refused');
      assert.equal(refused?.status?.id, undefined, 'nothing of X is copied');
      // A refused resource is no user of team-c's config: it cannot block that config's deletion.
      const config = await stack.cluster().get(resources.providerConfig, '', 'team-c');
      assert.equal(config?.status?.users ?? 0, 0);
      await tenant.request(z.unknown(), {
        method: 'DELETE',
        path: objectPath(resources.gpuPod, { namespace: 'team-b', name: 'grab-x' }),
      });
      await stack
        .cluster()
        .waitFor(resources.gpuPod, 'team-b', 'grab-x', (obj) => obj === undefined, 'released');
      const touched = stack
        .sim()
        .calls.log()
        .slice(mark)
        .filter((call) => Object.values(call.params).includes(x.id));
      assert.deepEqual(touched, [], 'no call at all named X, not even a read');
      assert.equal((await teamC.pods.get(x.id)).status, 'RUNNING');
      assert.ok(!operator.logs.some((line) => line.includes(`Deleting GpuPod ${x.id}`)));
    } finally {
      await teamC.close();
    }
  });

  test('a pod created paused is refused its resume while the account is full, and resumes once GPUs free up', async () => {
    // team-e allows 2 live GPUs. A create runs what it creates (the request has no paused flag), so the
    // pod counts its GPU from its create until it is paused; paused, it holds none.
    const cluster = stack.cluster();
    const pods = { held: 'held', filler: 'filler', alsoPaused: 'also-paused' };
    const cloudPod = () => {
      const [pod] = podsNamed(pods.held).filter((pod) => pod.org === 'team-e');
      return pod;
    };
    try {
      await cluster.create(
        resources.gpuPod,
        'team-e',
        manifests.gpuPod(pods.held, { paused: true, ...account('team-e') }),
      );
      await cluster.waitFor(resources.gpuPod, 'team-e', pods.held, isReady('Paused'), 'paused', 60_000);
      assert.equal(cloudPod()?.status, 'PAUSED');
      // The room the paused pod left is taken: the account is at its limit.
      await cluster.create(
        resources.gpuPod,
        'team-e',
        manifests.gpuPod(pods.filler, { gpuCount: 2, ...account('team-e') }),
      );
      await cluster.waitFor(resources.gpuPod, 'team-e', pods.filler, isReady('Running'), 'Running', 60_000);
      const resumesBefore = callsTo('pods.resume');
      await cluster.patch(resources.gpuPod, 'team-e', pods.held, { spec: { paused: false } });
      const refused = await cluster.waitFor(
        resources.gpuPod,
        'team-e',
        pods.held,
        synced('GuardrailExceeded'),
        'resume refused',
      );
      assert.equal(condition(refused, 'Synced')?.status, 'False');
      assert.equal(
        condition(refused, 'Synced')?.message,
        'provider config team-e: 1 more GPUs would make 3 live, over its limit of 2; retried as GPUs free up',
      );
      // A retry is refused too (each failed reconcile logs its line; the Warning is said once), and still
      // nothing was sent.
      await until(() => refusals(`team-e/${pods.held}`, 'GuardrailExceeded') >= 2, 'refused twice');
      assert.equal(callsTo('pods.resume'), resumesBefore, 'no resume was sent');
      assert.equal(cloudPod()?.status, 'PAUSED');
      // A pod created paused now is refused at its create: the cloud would run it until it is paused.
      const createsBefore = callsTo('pods.create');
      await cluster.create(
        resources.gpuPod,
        'team-e',
        manifests.gpuPod(pods.alsoPaused, { paused: true, ...account('team-e') }),
      );
      const refusedCreate = await cluster.waitFor(
        resources.gpuPod,
        'team-e',
        pods.alsoPaused,
        synced('GuardrailExceeded'),
        'create refused',
      );
      assert.equal(
        condition(refusedCreate, 'Synced')?.message,
        'provider config team-e: 1 more GPUs would make 3 live, over its limit of 2; retried as GPUs free up',
      );
      assert.equal(callsTo('pods.create'), createsBefore, 'no create was sent');
      assert.deepEqual(podsNamed(pods.alsoPaused), []);
      // Deleting the filler frees its 2 GPUs: the resume goes through on a later try, and so does the create.
      await cluster.delete(resources.gpuPod, 'team-e', pods.filler);
      await cluster.waitFor(resources.gpuPod, 'team-e', pods.held, isReady('Running'), 'resumed', 60_000);
      assert.equal(cloudPod()?.status, 'RUNNING');
      assert.ok(callsTo('pods.resume') > resumesBefore, 'the resume was sent once there was room');
      await cluster.waitFor(resources.gpuPod, 'team-e', pods.alsoPaused, isReady('Paused'), 'paused', 60_000);
    } finally {
      for (const name of Object.values(pods))
        await cluster.delete(resources.gpuPod, 'team-e', name).catch(absent);
    }
  });

  test('an endpoint created stopped is refused its start while the account is full, and starts once GPUs free up', async () => {
    // team-f allows 2 live GPUs; the endpoint's one worker holds 1. A create starts the endpoint whatever the
    // spec says (the request has no stopped flag), so it counts at its create; stopped, it holds none.
    const cluster = stack.cluster();
    const endpointState = () => {
      const [endpoint] = stack
        .sim()
        .state.snapshot()
        .endpoints.filter((endpoint) => endpoint.org === 'team-f' && endpoint.name === 'held-ep');
      return endpoint;
    };
    try {
      await cluster.create(
        resources.serverlessEndpoint,
        'team-f',
        manifests.serverlessEndpoint('held-ep', { stopped: true, workers: 1, ...account('team-f') }),
      );
      await cluster.waitFor(
        resources.serverlessEndpoint,
        'team-f',
        'held-ep',
        isReady('Stopped'),
        'stopped',
        60_000,
      );
      assert.equal(endpointState()?.status, 'STOPPED');
      await cluster.create(
        resources.gpuPod,
        'team-f',
        manifests.gpuPod('filler', { gpuCount: 2, ...account('team-f') }),
      );
      await cluster.waitFor(resources.gpuPod, 'team-f', 'filler', isReady('Running'), 'Running', 60_000);
      const before = { start: callsTo('serverless.start'), scale: callsTo('serverless.scaleWorkers') };
      await cluster.patch(resources.serverlessEndpoint, 'team-f', 'held-ep', { spec: { stopped: false } });
      const refused = await cluster.waitFor(
        resources.serverlessEndpoint,
        'team-f',
        'held-ep',
        synced('GuardrailExceeded'),
        'start refused',
      );
      assert.equal(condition(refused, 'Synced')?.status, 'False');
      assert.equal(
        condition(refused, 'Synced')?.message,
        'provider config team-f: 1 more GPUs would make 3 live, over its limit of 2; retried as GPUs free up',
      );
      await until(() => refusals('team-f/held-ep', 'GuardrailExceeded') >= 2, 'refused twice');
      assert.equal(callsTo('serverless.start'), before.start, 'no start was sent');
      assert.equal(callsTo('serverless.scaleWorkers'), before.scale, 'no scale was sent');
      assert.equal(endpointState()?.status, 'STOPPED');
      await cluster.delete(resources.gpuPod, 'team-f', 'filler');
      await cluster.waitFor(
        resources.serverlessEndpoint,
        'team-f',
        'held-ep',
        isReady('Running'),
        'started',
        60_000,
      );
      assert.equal(endpointState()?.status, 'RUNNING');
      assert.ok(callsTo('serverless.start') > before.start, 'the start was sent once there was room');
    } finally {
      await cluster.delete(resources.gpuPod, 'team-f', 'filler').catch(absent);
      await cluster.delete(resources.serverlessEndpoint, 'team-f', 'held-ep').catch(absent);
    }
  });

  test('a VM made outside the cluster counts against the pod limit before any GpuVm names the account', async () => {
    // team-g allows 5 live GPUs and runs a 2-GPU VM (type 302: 2 x L40S) made with its key, before any
    // resource names the account: the first pod to name it, asking for 4 (which fit alone), must already
    // see the VM.
    const teamG = new GpuCloudClient({ baseUrl: stack.sim().url, apiKey: KEYS.teamG });
    const cluster = stack.cluster();
    try {
      await cluster.waitFor(resources.providerConfig, '', 'team-g', isReady('KeyAccepted'), 'Ready');
      const vm = await teamG.vms.create({
        vmTypeId: 302,
        region: 'us-east-1',
        isSpot: false,
        name: 'by-hand',
      });
      assert.equal(vm.gpuCount, 2);
      const createsBefore = callsTo('pods.create');
      await cluster.create(
        resources.gpuPod,
        'team-g',
        manifests.gpuPod('beside-vm', { gpuCount: 4, ...account('team-g') }),
      );
      const refused = await cluster.waitFor(
        resources.gpuPod,
        'team-g',
        'beside-vm',
        synced('GuardrailExceeded'),
        'refused',
      );
      assert.equal(
        condition(refused, 'Synced')?.message,
        'provider config team-g: 4 more GPUs would make 6 live, over its limit of 5; retried as GPUs free up',
      );
      assert.equal(callsTo('pods.create'), createsBefore, 'no create was sent');
      assert.deepEqual(podsNamed('beside-vm'), []);
      const gpuVms = await cluster.client.request(z.object({ items: z.array(z.unknown()) }), {
        method: 'GET',
        path: collectionPath(resources.gpuVm, 'team-g'),
      });
      assert.deepEqual(gpuVms.items, [], 'no GpuVm names the account');
      // Terminating the VM (once it has started: the cloud refuses it before) frees its GPUs.
      await eventually(async () => assert.equal((await teamG.vms.get(vm.id)).status, 'RUNNING'));
      await teamG.vms.terminate(vm.id);
      await cluster.waitFor(resources.gpuPod, 'team-g', 'beside-vm', isReady('Running'), 'Running', 60_000);
      assert.equal(callsTo('pods.create'), createsBefore + 1);
    } finally {
      await cluster.delete(resources.gpuPod, 'team-g', 'beside-vm').catch(absent);
      await teamG.close();
    }
  });

  test('an endpoint counts against the live-GPU limit from its create, before a list shows it running', async () => {
    // team-h allows 2 live GPUs; a 1-GPU pod runs. A new 1-GPU endpoint fits; the cloud answers its create
    // INITIALIZING (runningWorkers 0: its worker is starting) and holds the worker's GPU from then on, as it
    // does while RUNNING. The operator's view of the endpoint is that answer until a list started after it
    // comes in (the next poll): endpoint lists fail from just before the create, so that this window stays
    // open for the test rather than for the length of a poll. The account must count the endpoint all along,
    // and refuse one more 1-GPU pod.
    const cluster = stack.cluster();
    /** GPUs the cloud holds for team-h: pods not paused or terminated, and one per endpoint worker here. */
    const teamHGpus = () => {
      const state = stack.sim().state.snapshot();
      const pods = state.pods.filter(
        (pod) => pod.org === 'team-h' && !['PAUSED', 'TERMINATED'].includes(pod.status),
      );
      const endpoints = state.endpoints.filter((endpoint) => endpoint.org === 'team-h');
      return (
        pods.reduce((sum, pod) => sum + pod.gpuCount, 0) +
        endpoints.reduce((sum, endpoint) => sum + endpoint.totalWorkers, 0)
      );
    };
    try {
      await cluster.create(resources.gpuPod, 'team-h', manifests.gpuPod('first', account('team-h')));
      // Running means every kind of the account has been listed: its total is counted.
      await cluster.waitFor(resources.gpuPod, 'team-h', 'first', isReady('Running'), 'Running', 60_000);
      stack.sim().faults.set({ errorRate: 1, operations: ['serverless.list'] });
      await cluster.create(
        resources.serverlessEndpoint,
        'team-h',
        manifests.serverlessEndpoint('new-ep', { workers: 1, ...account('team-h') }),
      );
      await cluster.waitFor(
        resources.serverlessEndpoint,
        'team-h',
        'new-ep',
        // Recorded as soon as the create is answered, before any status is reported.
        (obj) => obj?.metadata.annotations?.[EXTERNAL_ID] !== undefined,
        'created',
        60_000,
      );
      assert.equal(teamHGpus(), 2, 'the account is at its limit');
      const createsBefore = callsTo('pods.create');
      await cluster.create(resources.gpuPod, 'team-h', manifests.gpuPod('one-more', account('team-h')));
      const refused = await cluster.waitFor(
        resources.gpuPod,
        'team-h',
        'one-more',
        (obj) => synced('GuardrailExceeded')(obj) || isReady()(obj) || obj?.status?.id !== undefined,
        'refused or created',
        60_000,
      );
      assert.equal(
        condition(refused, 'Synced')?.message,
        'provider config team-h: 1 more GPUs would make 3 live, over its limit of 2; retried as GPUs free up',
        `live GPUs in the cloud now: ${teamHGpus()}`,
      );
      assert.equal(callsTo('pods.create'), createsBefore, 'no create was sent');
      assert.equal(teamHGpus(), 2);
    } finally {
      stack.sim().faults.set({ errorRate: 0, operations: null });
      await cluster.delete(resources.gpuPod, 'team-h', 'one-more').catch(absent);
      await cluster.delete(resources.gpuPod, 'team-h', 'first').catch(absent);
      await cluster.delete(resources.serverlessEndpoint, 'team-h', 'new-ep').catch(absent);
    }
  });

  test('a burst against a slow cloud ends with exactly what the live-GPU limit allows', async () => {
    // team-d's limit is 10 live GPUs and it already runs 2 made outside the cluster: 8 one-GPU pods fit.
    // 50 are applied at once, every pod create taking 300 ms as a real cloud's might, with CONCURRENCY (16)
    // reconciles at a time: more creates in flight than there is room for, each checked before the others'
    // answers are in. Without the account's one reservation, all 16 of the first wave pass the check.
    // It comes after the other limit tests: its 42 refused pods' retries draw on the controller's overall
    // retry budget (10 a second, burst 100), which would hold back the retries of a test after it.
    const LIMIT = 10;
    const OUTSIDE = 2;
    const BURST = 50;
    const FITS = LIMIT - OUTSIDE;
    assert.ok(CONCURRENCY > FITS, 'more reconciles at once than pods that fit');
    const teamD = new GpuCloudClient({ baseUrl: stack.sim().url, apiKey: KEYS.teamD });
    const cluster = stack.cluster();
    const names = Array.from({ length: BURST }, (_, index) => `burst-${index}`);
    const teamDPods = () =>
      stack
        .sim()
        .state.snapshot()
        .pods.filter((pod) => pod.org === 'team-d' && pod.status !== 'TERMINATED');
    try {
      await cluster.waitFor(resources.providerConfig, '', 'team-d', isReady('KeyAccepted'), 'Ready');
      await teamD.pods.create({
        name: 'outside',
        image: 'ubuntu:24.04',
        gpuType: 'NVIDIA L40S',
        gpuCount: OUTSIDE,
      });
      stack.sim().faults.set({ latencyMs: 300, operations: ['pods.create'] });
      const createsBefore = callsTo('pods.create');
      await Promise.all(
        names.map((name) =>
          cluster.create(resources.gpuPod, 'team-d', manifests.gpuPod(name, account('team-d'))),
        ),
      );
      const settled = (obj: TestObject | undefined) =>
        isReady('Running')(obj) || synced('GuardrailExceeded')(obj);
      const final: Array<TestObject | undefined> = [];
      for (const name of names) {
        final.push(await cluster.waitFor(resources.gpuPod, 'team-d', name, settled, 'settled', 60_000));
      }
      const running = final.filter(isReady('Running'));
      const refused = final.filter(synced('GuardrailExceeded'));
      assert.equal(running.length, FITS, 'exactly the pods that fit run');
      assert.equal(refused.length, BURST - FITS, 'every other pod is refused');
      for (const obj of refused) {
        const refusal = condition(obj, 'Synced');
        assert.equal(refusal?.status, 'False');
        assert.equal(
          refusal?.message,
          `provider config team-d: 1 more GPUs would make ${LIMIT + 1} live, over its limit of ${LIMIT}; retried as GPUs free up`,
        );
        assert.equal(obj?.status?.id, undefined, `${obj?.metadata.name} names no cloud object`);
        assert.deepEqual(podsNamed(obj?.metadata.name ?? ''), [], `nothing of ${obj?.metadata.name} runs`);
      }
      assert.equal(
        callsTo('pods.create') - createsBefore,
        FITS,
        'one create per pod that fits, none for the rest',
      );
      assert.equal(
        teamDPods().reduce((sum, pod) => sum + pod.gpuCount, 0),
        LIMIT,
        'exactly the limit is live',
      );
    } finally {
      stack.sim().faults.set({ latencyMs: 0, operations: null });
      for (const name of names) await cluster.delete(resources.gpuPod, 'team-d', name);
      await teamD.close();
    }
  });

  test('a config in use is not deleted until its users are gone', async () => {
    const cluster = stack.cluster();
    await cluster.delete(resources.providerConfig, '', 'team-a');
    const held = await cluster.waitFor(
      resources.providerConfig,
      '',
      'team-a',
      (obj) => condition(obj, 'Ready')?.reason === 'InUse',
      'InUse',
    );
    assert.ok(held?.metadata.deletionTimestamp);
    for (const [ns, name] of [
      ['team-a', 'a-pod'],
      ['team-a', 'after-rotation'],
      ['other', 'intruder'],
      ['team-a2', 'adopter'],
    ] as const) {
      await cluster.delete(resources.gpuPod, ns, name);
    }
    await cluster.waitFor(
      resources.providerConfig,
      '',
      'team-a',
      (obj) => obj === undefined,
      'deleted',
      60_000,
    );
  });
});
