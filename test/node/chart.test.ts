import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  CoordinationV1Api,
  CoreV1Api,
  DiscoveryV1Api,
  PolicyV1Api,
  type V1Pod,
} from '@kubernetes/client-node';
import { KubeClient } from '../../src/kube/client.ts';
import { type ControlPlane, startControlPlane } from '../../src/local/controlplane.ts';
import { imageBaseName } from '../../src/local/node.ts';
import { type NodeCluster, startNodeCluster } from '../../src/local/node-cluster.ts';
import { DELETION_PROTECTION } from '../../src/managed/core/annotations.ts';
import { type RunningSimulator, startSimulator } from '../../src/sim/index.ts';
import { TENANT_GROUP_VERSION } from '../../src/tenant-api/group.ts';
import { PLAIN_MANIFESTS, REPO_ROOT } from '../../tools/helm/artifacts.ts';
import { type BuiltImage, ensureImage } from '../../tools/image/ensure.ts';
import { type InstalledChart, installChart } from '../support/chart.ts';
import { eventually } from '../support/eventually.ts';
import { kubectl } from '../support/kubectl.ts';
import { API_KEY, Cluster, isReady, manifests, resources } from '../support/operator.ts';
import { apiServiceAvailable } from '../tenant-api/support.ts';

// The chart installed by `helm install` onto a real node (containerd, runc, a kubelet: tools/node),
// running the image the Dockerfile makes (`npm run image`), under the controllers of a real cluster: what
// only a kubelet, a runtime, Deployments, the garbage collector, the namespace controller and the
// eviction API show. One node for the whole file: it is the heaviest start of the suite.

const NAMESPACE = 'gpucloud-system';
const RELEASE = 'gpucloud-operator';
const TENANT = 'team-a';
const SELECTOR = `app.kubernetes.io/name=gpucloud-operator,app.kubernetes.io/instance=${RELEASE}`;
const IMAGE_BUILD_TIMEOUT_MS = 20 * 60_000;
/** The image is local, yet a Pod on a busy shared machine takes seconds to start and pass its probes. */
const POD_TIMEOUT_MS = 120_000;
/** A second name for the same image: a changed image reference rolls the Deployment out as a release does. */
const NEXT_TAG = 'next';

let plane: ControlPlane;
let cluster: NodeCluster;
let sim: RunningSimulator;
let image: BuiltImage;
let chart: InstalledChart;
let kube: Cluster;
let core: CoreV1Api;
let startedAt: number;

describe('the chart on a real node', { timeout: 1_200_000 }, () => {
  before(
    async () => {
      startedAt = Date.now();
      image = await ensureImage((line) => console.log(line));
      // The apiserver reaches an APIService's server at its endpoint's address, as a cluster without
      // kube-proxy on its control plane must: a Service's cluster IP leads nowhere here.
      plane = await startControlPlane({ apiserverFlags: ['--enable-aggregator-routing=true'] });
      cluster = await startNodeCluster(plane);
      await cluster.node.importImage(image.archive, image.reference);
      // Where the operator's Pod reaches it: the host's end of the node's link, nothing of the machine's.
      // Every cloud pod stays visible for the whole file, so that a duplicate made at any time is seen.
      sim = await startSimulator({
        apiKeys: [API_KEY],
        transitionMs: 50,
        retentionMs: 3_600_000,
        host: cluster.node.hostAddress,
      });
      core = plane.kubeConfig.makeApiClient(CoreV1Api);
      kube = new Cluster(plane);
      console.log(`image, control plane, node and simulator ready in ${Date.now() - startedAt} ms`);
      chart = await installChart(plane, { release: RELEASE, namespace: NAMESPACE, values: chartValues() });
      await kube.ensureNamespace(TENANT);
    },
    { timeout: IMAGE_BUILD_TIMEOUT_MS },
  );

  after(async () => {
    await chart?.uninstall().catch(() => undefined);
    await cluster?.stop();
    await sim?.stop();
    await plane?.stop();
    console.log(`whole file, stops included: ${Date.now() - startedAt} ms`);
  });

  test('the operator Pod is scheduled onto the node and becomes Ready through its probes', async () => {
    const [pod] = await readyOperators(1);
    assert.equal(pod?.spec?.nodeName, cluster.node.name);
    const container = pod?.spec?.containers[0];
    assert.equal(container?.image, image.reference);
    assert.equal(container?.readinessProbe?.httpGet?.path, '/readyz');
    assert.equal(container?.livenessProbe?.httpGet?.path, '/healthz');
  });

  test('kubectl logs shows its log, through the apiserver and the kubelet', assertLogs);

  test('a GpuPod converges to one cloud pod, and its connection Secret is written', async () => {
    await kube.create(
      resources.gpuPod,
      TENANT,
      manifests.gpuPod('first', { writeConnectionSecretToRef: { name: 'first-connection' } }),
    );
    await converged('first');
    await eventually(() => core.readNamespacedSecret({ name: 'first-connection', namespace: TENANT }));
    assertNoDuplicates();
  });

  test("the metrics Service is scraped at its endpoint's address", assertScraped);

  test('a killed container is restarted by the kubelet; the operator does what was asked meanwhile, once', () =>
    killAndRecover('while-restarting'));

  test('two replicas: one Pod leads, the other stands by, Ready too', async () => {
    await chart.upgrade({ replicaCount: 2 });
    await oneOfTwoLeads();
  });

  test('a deleted leader Pod hands over to the other one, which does the work', () =>
    handOver('after-handover'));

  test('helm upgrade to another image rolls out with no duplicate and no missed change', async () => {
    // The same build under a second name: a changed image reference is what a release changes in the
    // Pod template, so the Deployment rolls out (surge one, keep every old Pod until a new one is Ready)
    // and the Lease moves to a new Pod exactly as it would for a new version.
    const next = `${imageBaseName(image.reference)}:${NEXT_TAG}`;
    await rollOut({
      replicas: 2,
      next,
      release: () => chart.upgrade({ image: { tag: NEXT_TAG } }),
      // Changes made while the rollout runs: each must be done once, whichever Pod leads by then.
      meanwhile: async () => {
        await kube.patch(resources.gpuPod, TENANT, 'first', { spec: { paused: true } });
        for (const n of [1, 2, 3]) {
          await kube.create(resources.gpuPod, TENANT, manifests.gpuPod(`rollout-${n}`));
        }
      },
    });
    await kube.waitFor(resources.gpuPod, TENANT, 'first', isReady('Paused'), 'Paused', POD_TIMEOUT_MS);
    for (const n of [1, 2, 3]) await converged(`rollout-${n}`);
    assertNoDuplicates();
  });

  test("kubectl drain evicts one operator Pod and is refused the other by the chart's PodDisruptionBudget", async () => {
    await chart.upgrade({ podDisruptionBudget: { enabled: true } });
    const policy = plane.kubeConfig.makeApiClient(PolicyV1Api);
    // Once the disruption controller has counted the Pods, the eviction API answers by the budget.
    await eventually(async () => {
      const budget = await policy.readNamespacedPodDisruptionBudget({ name: RELEASE, namespace: NAMESPACE });
      assert.equal(budget.status?.observedGeneration, budget.metadata?.generation, JSON.stringify(budget));
      assert.equal(budget.status?.expectedPods, 2, JSON.stringify(budget.status));
    });
    let drain: RunningDrain | undefined;
    try {
      drain = await drainUntilRefused();
      // The refusal is the counted event: the eviction API answered "would violate" for the second Pod.
      assert.match(drain.output, /Cannot evict pod as it would violate the pod's disruption budget/);
      const pods = await operatorPods();
      const running = pods.filter((pod) => !pod.metadata?.deletionTimestamp && isPodReady(pod));
      assert.equal(running.length, 1, JSON.stringify(pods.map((pod) => [name(pod), pod.status?.phase])));
      // It leads (it took over if the evicted one led), and the work goes on during the drain.
      await eventually(async () => assert.equal(await leaseHolder(), name(running[0])), {
        timeoutMs: POD_TIMEOUT_MS,
      });
      await kube.create(resources.gpuPod, TENANT, manifests.gpuPod('during-drain'));
      await converged('during-drain');
    } finally {
      drain?.stop();
      await kubectl(plane, 'uncordon', cluster.node.name);
    }
    await readyOperators(2);
    assertNoDuplicates();
  });

  test("the garbage collector deletes a GpuPod's connection Secret with it", async () => {
    await kube.delete(resources.gpuPod, TENANT, 'first');
    await kube.waitFor(resources.gpuPod, TENANT, 'first', (obj) => obj === undefined, 'gone', POD_TIMEOUT_MS);
    assertDeletedInCloud('first');
    await eventually(async () => {
      const secrets = await core.listNamespacedSecret({ namespace: TENANT });
      assert.ok(!secrets.items.some((secret) => secret.metadata?.name === 'first-connection'));
    });
  });

  test("a deleted namespace's GpuPods are deleted by the namespace controller, their cloud pods with them", async () => {
    const doomed = 'doomed';
    await kube.ensureNamespace(doomed);
    await kube.create(resources.gpuPod, doomed, manifests.gpuPod('in-doomed'));
    await converged('in-doomed', doomed);
    await core.deleteNamespace({ name: doomed });
    await namespaceGone(doomed);
    assertDeletedInCloud('in-doomed');
  });

  test('a namespace holding a deletion-protected GpuPod stays Terminating, its cloud pod running, until the annotation goes', async () => {
    const guarded = 'guarded';
    await kube.ensureNamespace(guarded);
    await kube.create(
      resources.gpuPod,
      guarded,
      manifests.gpuPod('protected', {}, { annotations: { [DELETION_PROTECTION]: 'true' } }),
    );
    await converged('protected', guarded);
    await core.deleteNamespace({ name: guarded });
    // The counted event: the namespace controller tried the content and reported the policy's refusal.
    const held = await eventually(
      async () => {
        const ns = await core.readNamespace({ name: guarded });
        const failure = ns.status?.conditions?.find((c) => c.type === 'NamespaceDeletionContentFailure');
        assert.equal(failure?.status, 'True', JSON.stringify(ns.status));
        return failure?.message ?? '';
      },
      { timeoutMs: POD_TIMEOUT_MS },
    );
    assert.match(held, /deletion-protection/);
    assert.equal(cloudPods('protected')[0]?.status, 'RUNNING');
    assert.ok(await kube.get(resources.gpuPod, guarded, 'protected'));
    await kube.patch(resources.gpuPod, guarded, 'protected', {
      metadata: { annotations: { [DELETION_PROTECTION]: null } },
    });
    await namespaceGone(guarded);
    assertDeletedInCloud('protected');
  });

  test('the tenant API, served by the leader Pod through the aggregator; while no operator runs, namespace deletion is held', async () => {
    await chart.upgrade({ tenantApi: { enabled: true } });
    const client = new KubeClient(plane.connection);
    await eventually(async () => assert.equal(await apiServiceAvailable(client), 'True'), {
      timeoutMs: POD_TIMEOUT_MS * 2,
    });
    const served = await kubectl(plane, 'get', '--raw', `/apis/${TENANT_GROUP_VERSION}`);
    assert.match(served, /"groupVersion":"tenant\.gpucloud\.io\/v1alpha1"/);
    await kube.ensureNamespace('served');
    await core.deleteNamespace({ name: 'served' });
    await namespaceGone('served');

    await kubectl(plane, 'scale', 'deployment', RELEASE, '-n', NAMESPACE, '--replicas=0');
    await eventually(async () => assert.deepEqual((await operatorPods()).map(name), []), {
      timeoutMs: POD_TIMEOUT_MS,
    });
    await kube.ensureNamespace('held');
    await core.deleteNamespace({ name: 'held' });
    // The counted event: the namespace controller tried, and reported the group it could not discover.
    const held = await eventually(
      async () => {
        const ns = await core.readNamespace({ name: 'held' });
        const failure = ns.status?.conditions?.find((c) => c.type === 'NamespaceDeletionDiscoveryFailure');
        assert.equal(failure?.status, 'True', JSON.stringify(ns.status));
        return failure?.message ?? '';
      },
      { timeoutMs: POD_TIMEOUT_MS },
    );
    assert.match(held, /tenant\.gpucloud\.io/);
    await kubectl(plane, 'scale', 'deployment', RELEASE, '-n', NAMESPACE, '--replicas=2');
    await readyOperators(2);
    await namespaceGone('held');
  });

  test('helm uninstall as the docs say: resources deleted first leave no cloud pod, the rest stays, the operator goes', async () => {
    await deleteAllGpuPods();
    // What the docs say uninstall leaves alone: a resource not deleted first, and its cloud pod.
    await kube.create(resources.gpuPod, TENANT, manifests.gpuPod('left-behind'));
    await converged('left-behind');
    await chart.uninstall();
    await eventually(async () => assert.deepEqual((await operatorPods()).map(name), []), {
      timeoutMs: POD_TIMEOUT_MS,
    });
    const running = sim.state.snapshot().pods.filter((pod) => !DELETED.test(pod.status));
    assert.deepEqual(
      running.map((pod) => [pod.name, pod.status]),
      [['left-behind', 'RUNNING']],
    );
    assert.ok(await kube.get(resources.gpuPod, TENANT, 'left-behind'), 'the CRDs and resources stay');
    assertNoDuplicates();
  });

  // The same behaviours, installed as docs/install.md installs the plain manifests (one replica, scaled by
  // hand), after the chart's uninstall: what the chart tests are made to hold for both.
  describe('the plain manifests', () => {
    let manifest: string;
    let reference: string;

    test('applied as the docs say: Ready through its probes, logs without the key, scraped, a GpuPod converges', async () => {
      manifest = await readFile(join(REPO_ROOT, PLAIN_MANIFESTS), 'utf8');
      reference = /^\s+image: (\S+)$/m.exec(manifest)?.[1] ?? '';
      assert.ok(reference, 'the plain manifests name an image');
      // The image the manifests name, as a registry would give it: the same build under that name.
      await cluster.node.ctr(['images', 'tag', '--force', image.reference, reference]);
      await kubectl(
        plane,
        'delete',
        'secret',
        '-n',
        NAMESPACE,
        '--ignore-not-found',
        `${RELEASE}-credentials`,
      );
      await kubectl(
        plane,
        ...['create', 'secret', 'generic', `${RELEASE}-credentials`, '-n', NAMESPACE],
        `--from-literal=api-key=${API_KEY}`,
        `--from-literal=api-url=${sim.url}`,
      );
      await kubectl(plane, 'apply', '--server-side', '-f', join(REPO_ROOT, PLAIN_MANIFESTS));
      const [pod] = await readyOperators(1);
      assert.equal(pod?.spec?.containers[0]?.image, reference);
      await assertLogs();
      await assertScraped();
      await kube.create(resources.gpuPod, TENANT, manifests.gpuPod('plain'));
      await converged('plain');
    });

    test('a killed container is restarted by the kubelet; what was asked meanwhile is done once', () =>
      killAndRecover('plain-while-restarting'));

    test('a new file naming another image, applied, rolls out with no duplicate and no missed change', async () => {
      const next = `${imageBaseName(reference)}:${NEXT_TAG}`;
      const file = join(await mkdtemp(join(tmpdir(), 'gpucloud-manifests-')), 'gpucloud-operator.yaml');
      await writeFile(file, manifest.replaceAll(`image: ${reference}`, `image: ${next}`));
      await rollOut({
        replicas: 1,
        next,
        release: () => kubectl(plane, 'apply', '--server-side', '-f', file),
        meanwhile: async () => {
          await kube.patch(resources.gpuPod, TENANT, 'plain', { spec: { paused: true } });
          await kube.create(resources.gpuPod, TENANT, manifests.gpuPod('plain-rollout'));
        },
      });
      await kube.waitFor(resources.gpuPod, TENANT, 'plain', isReady('Paused'), 'Paused', POD_TIMEOUT_MS);
      await converged('plain-rollout');
      assertNoDuplicates();
    });

    test('scaled to two, one leads; a deleted leader Pod hands over to the other, which does the work', async () => {
      await kubectl(plane, 'scale', 'deployment', RELEASE, '-n', NAMESPACE, '--replicas=2');
      await oneOfTwoLeads();
      await handOver('plain-after-handover');
    });

    test('kubectl delete -f removes the operator; what it made goes first, as the docs say', async () => {
      // The resource the chart's uninstall left behind is the new operator's to delete, as the docs say.
      await deleteAllGpuPods();
      await kubectl(plane, 'delete', '-f', join(REPO_ROOT, PLAIN_MANIFESTS), '--wait', '--timeout=120s');
      await eventually(async () => assert.deepEqual((await operatorPods()).map(name), []), {
        timeoutMs: POD_TIMEOUT_MS,
      });
      for (const gpuPod of ['plain', 'plain-while-restarting', 'plain-rollout', 'plain-after-handover']) {
        assertDeletedInCloud(gpuPod);
      }
      assertDeletedInCloud('left-behind');
      assertNoDuplicates();
    });
  });
});

/** Deletes every GpuPod and waits until they are gone: their cloud pods deleted first, by the finalizer. */
async function deleteAllGpuPods(): Promise<void> {
  await kubectl(
    plane,
    'delete',
    'gpupods.gpucloud.io',
    '--all',
    '--all-namespaces',
    '--wait',
    '--timeout=120s',
  );
}

/** Two operator Pods Ready, one of them holding the Lease. */
async function oneOfTwoLeads(): Promise<void> {
  const pods = await readyOperators(2);
  const holder = await leaseHolder();
  assert.ok(
    pods.some((pod) => name(pod) === holder),
    `${holder} is one of ${pods.map(name).join(', ')}`,
  );
}

/** kubectl logs of an operator Pod, through the apiserver and the kubelet: its log, without the key. */
async function assertLogs(): Promise<void> {
  const [pod] = await readyOperators(1);
  const log = await kubectl(plane, 'logs', '-n', NAMESPACE, name(pod));
  assert.match(log, /"msg":"[^"]*lead/i);
  assert.ok(!log.includes(API_KEY), 'the API key is not in the log');
}

/** The metrics Service scraped at the address its EndpointSlice gives, as Prometheus does. */
async function assertScraped(): Promise<void> {
  const address = await metricsEndpoint();
  const response = await fetch(`http://${address}/metrics`);
  assert.equal(response.status, 200);
  assert.match(await response.text(), /^gpucloud_\w+/m);
}

/** Kills the one operator's container; the kubelet restarts it, and `gpuPod`, asked meanwhile, converges once. */
async function killAndRecover(gpuPod: string): Promise<void> {
  const [pod] = await readyOperators(1);
  await cluster.node.ctr(['tasks', 'kill', '--signal', 'SIGKILL', containerId(pod)]);
  // Asked while the operator is down or starting again.
  await kube.create(resources.gpuPod, TENANT, manifests.gpuPod(gpuPod));
  // The kubelet's restart is the counted event: the same Pod, its container restarted once, Ready again.
  const restarted = await eventually(
    async () => {
      const [current] = await readyOperators(1);
      assert.equal(current?.status?.containerStatuses?.[0]?.restartCount, 1);
      return current;
    },
    { timeoutMs: POD_TIMEOUT_MS },
  );
  assert.equal(name(restarted), name(pod));
  assert.equal(restarted?.status?.containerStatuses?.[0]?.lastState?.terminated?.exitCode, 137);
  await converged(gpuPod);
  assertNoDuplicates();
}

/** Deletes the leader of two operator Pods: the other takes the Lease and does `gpuPod`, asked meanwhile. */
async function handOver(gpuPod: string): Promise<void> {
  const leader = await leaseHolder();
  await core.deleteNamespacedPod({ name: leader, namespace: NAMESPACE });
  await kube.create(resources.gpuPod, TENANT, manifests.gpuPod(gpuPod));
  const successor = await eventually(async () => {
    const holder = await leaseHolder();
    // A leader that stops gracefully lets go first: the Lease is held by nobody for a moment.
    assert.ok(holder !== '' && holder !== leader, `held by "${holder}"`);
    return holder;
  });
  await converged(gpuPod);
  const pods = await readyOperators(2);
  assert.ok(pods.some((pod) => name(pod) === successor));
  assertNoDuplicates();
}

/**
 * A release of image `next` (the same build under a second name: a changed image reference is what a
 * release changes in the Pod template), with `meanwhile` changes made while it rolls out: every Pod
 * replaced (surge one, each old one kept until a new one is Ready) and the Lease held by a new one.
 */
async function rollOut(options: {
  replicas: number;
  next: string;
  release: () => Promise<unknown>;
  meanwhile: () => Promise<void>;
}): Promise<void> {
  await cluster.node.ctr(['images', 'tag', '--force', image.reference, options.next]);
  const before = (await operatorPods()).map(name);
  await options.release();
  await options.meanwhile();
  const pods = await eventually(
    async () => {
      const current = await readyOperators(options.replicas);
      assert.ok(
        current.every(
          (pod) => pod.spec?.containers[0]?.image === options.next && !before.includes(name(pod)),
        ),
      );
      return current;
    },
    { timeoutMs: POD_TIMEOUT_MS * 2 },
  );
  const holder = await eventually(async () => {
    const current = await leaseHolder();
    assert.ok(
      pods.some((pod) => name(pod) === current),
      `${current} leads`,
    );
    return current;
  });
  assert.ok(!before.includes(holder));
}

function chartValues(): Record<string, unknown> {
  const repository = imageBaseName(image.reference);
  return {
    image: { repository, tag: image.reference.slice(repository.length + 1), pullPolicy: 'Never' },
    apiUrl: sim.url,
    apiKey: { value: API_KEY },
    // A standby takes over within seconds of a leader that died without letting go.
    leaderElection: { leaseDurationSeconds: 6, renewDeadlineSeconds: 4, retryPeriodSeconds: 1 },
    operator: { pollIntervalSeconds: 5 },
  };
}

function name(pod: V1Pod | undefined): string {
  return pod?.metadata?.name ?? '';
}

async function operatorPods(): Promise<V1Pod[]> {
  return (await core.listNamespacedPod({ namespace: NAMESPACE, labelSelector: SELECTOR })).items;
}

function isPodReady(pod: V1Pod): boolean {
  return pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
}

/** The operator Pods, once there are exactly `count`, none of them terminating, all of them Ready. */
function readyOperators(count: number): Promise<V1Pod[]> {
  return eventually(
    async () => {
      const pods = await operatorPods();
      const summary = JSON.stringify(
        pods.map((pod) => [name(pod), pod.status?.phase, pod.metadata?.deletionTimestamp]),
      );
      assert.equal(pods.length, count, summary);
      assert.ok(
        pods.every((pod) => !pod.metadata?.deletionTimestamp && isPodReady(pod)),
        summary,
      );
      return pods;
    },
    { timeoutMs: POD_TIMEOUT_MS },
  );
}

async function leaseHolder(): Promise<string> {
  const coordination = plane.kubeConfig.makeApiClient(CoordinationV1Api);
  const lease = await coordination.readNamespacedLease({ name: RELEASE, namespace: NAMESPACE });
  // The operator's identity is `<hostname>_<uuid>`, and a Pod's hostname is its name.
  return (lease.spec?.holderIdentity ?? '').replace(/_[0-9a-f-]+$/, '');
}

function namespaceGone(namespace: string): Promise<void> {
  return eventually(
    async () => {
      const namespaces = await core.listNamespace();
      assert.ok(!namespaces.items.some((ns) => ns.metadata?.name === namespace), `${namespace} is there`);
    },
    { timeoutMs: POD_TIMEOUT_MS },
  );
}

function containerId(pod: V1Pod | undefined): string {
  const id = pod?.status?.containerStatuses?.[0]?.containerID ?? '';
  assert.match(id, /^containerd:\/\/[0-9a-f]{64}$/);
  return id.slice('containerd://'.length);
}

function cloudPods(gpuPodName: string) {
  return sim.state.snapshot().pods.filter((pod) => pod.name === gpuPodName);
}

/** A cloud pod being deleted or deleted: the operator's finalizer goes once the cloud accepted the delete. */
const DELETED = /^TERMINAT(ING|ED)$/;

function assertDeletedInCloud(gpuPod: string): void {
  const pods = cloudPods(gpuPod);
  assert.equal(pods.length, 1, JSON.stringify(pods));
  assert.match(pods[0]?.status ?? '', DELETED);
}

async function converged(gpuPod: string, namespace = TENANT): Promise<void> {
  await kube.waitFor(resources.gpuPod, namespace, gpuPod, isReady('Running'), 'Ready', POD_TIMEOUT_MS);
}

/** Each cloud pod the operator ever made has a name of its own: no GpuPod got two. */
function assertNoDuplicates(): void {
  const names = sim.state.snapshot().pods.map((pod) => pod.name);
  assert.deepEqual(
    names.filter((cloudName, index) => names.indexOf(cloudName) !== index),
    [],
  );
}

async function metricsEndpoint(): Promise<string> {
  const discovery = plane.kubeConfig.makeApiClient(DiscoveryV1Api);
  return eventually(async () => {
    const slices = await discovery.listNamespacedEndpointSlice({
      namespace: NAMESPACE,
      labelSelector: `kubernetes.io/service-name=${RELEASE}-metrics`,
    });
    const endpoint = slices.items.flatMap((slice) => slice.endpoints ?? []).find((e) => e.conditions?.ready);
    const port = slices.items.flatMap((slice) => slice.ports ?? [])[0]?.port;
    assert.ok(endpoint && port, JSON.stringify(slices.items));
    return `${endpoint.addresses[0]}:${port}`;
  });
}

interface RunningDrain {
  readonly output: string;
  stop(): void;
}

/** `kubectl drain` of the node, running until the eviction API has refused an eviction for the budget. */
function drainUntilRefused(): Promise<RunningDrain> {
  const child = spawn('kubectl', [
    '--kubeconfig',
    plane.kubeconfigPath,
    'drain',
    cluster.node.name,
    '--ignore-daemonsets',
    '--delete-emptydir-data',
    '--timeout=600s',
  ]);
  let output = '';
  const stop = () => {
    if (child.exitCode === null) child.kill('SIGTERM');
  };
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      stop();
      reject(new Error(`kubectl drain was never refused by the budget: ${output}`));
    }, POD_TIMEOUT_MS);
    const read = (chunk: Buffer) => {
      output += chunk.toString();
      if (/would violate the pod's disruption budget/.test(output)) {
        clearTimeout(timer);
        resolve({ output, stop });
      }
    };
    child.stdout.on('data', read);
    child.stderr.on('data', read);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`kubectl drain ended (${code}) before any refusal: ${output}`));
    });
  });
}
