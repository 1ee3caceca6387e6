import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { z } from 'zod';
import type { KubeClient } from '../../src/kube/client.ts';
import { collectionPath, deployments, objectPath } from '../../src/kube/resource-type.ts';
import { type SchedulingCluster, startSchedulingCluster } from '../../src/local/node-cluster.ts';
import { type RunningOperator, resources, startOperator } from '../support/operator.ts';
import { poll } from '../support/until.ts';
import {
  cloudCreates,
  createAccountKey,
  listPods,
  liveCloudPods,
  nodeReady,
  type Pod,
  readNode,
  running,
  startBystanderNode,
  useTeamsStack,
  virtualNodeDeployment,
  virtualNodeProviderConfig,
  waitForDefaultServiceAccount,
  waitForNodeReady,
} from '../support/virtual-node.ts';

// The operator down: its virtual node goes NotReady, and the cluster's own controllers do to its Pods what
// they do to a kubelet's that stopped answering. Real kube-controller-manager (node lifecycle, taint
// eviction, ReplicaSets) and kube-scheduler, the operator in-process, the simulator over HTTP.
const KEY = 'team-e-eviction-key';
const stack = useTeamsStack({ 'team-e': KEY });
const NS = 'team-e';
const KEY_NS = 'gpucloud-system';
const NODE = 'gpucloud-team-e';
/** Stands for the cluster's other nodes: with every node unheard, the node-lifecycle evicts nothing. */
const BYSTANDER = 'bystander';
/**
 * The virtual node renews its Lease every 10 s (a kubelet's cadence): 20 s unheard makes it NotReady here,
 * instead of the default 50 s, so the test waits less. The rest is the controllers' defaults.
 */
const GRACE_SECONDS = 20;
const OPERATOR_FLAGS = ['--virtual-nodes', 'true', '--virtual-node-address', '10.1.2.3'];

let admin: KubeClient;
let operator: RunningOperator | undefined;
let scheduling: SchedulingCluster | undefined;
let bystander: { stop(): Promise<void> } | undefined;

const podsOf = async (app: string) =>
  (await listPods(admin, NS)).filter((pod) => pod.metadata.name.startsWith(`${app}-`));
const idOf = (pod: Pod) => pod.metadata.annotations?.['gpucloud.io/external-id'];
const livePodNames = () => liveCloudPods(stack.sim()).map((p) => p.name);

describe('the virtual node while its operator is down', () => {
  before(async () => {
    const cluster = stack.cluster();
    admin = cluster.client;
    for (const namespace of [KEY_NS, NS]) await cluster.ensureNamespace(namespace);
    await createAccountKey(admin, KEY_NS, 'team-e', KEY);
    scheduling = await startSchedulingCluster(stack.plane(), {
      controllerManagerFlags: [`--node-monitor-grace-period=${GRACE_SECONDS}s`, '--node-monitor-period=1s'],
    });
    bystander = await startBystanderNode(admin, BYSTANDER);
    operator = await startOperator(stack.plane(), stack.sim(), {
      apiKey: 'operator-default-key',
      flags: OPERATOR_FLAGS,
    });
    await cluster.create(
      resources.providerConfig,
      '',
      virtualNodeProviderConfig({
        name: 'team-e',
        namespace: NS,
        apiUrl: stack.sim().url,
        keyNamespace: KEY_NS,
      }),
    );
    await waitForNodeReady(admin, NODE);
    await waitForDefaultServiceAccount(admin, NS);
  });
  after(async () => {
    await bystander?.stop();
    await operator?.stop();
    await scheduling?.stop();
  });

  test('Pods past their toleration are evicted and replaced; the operator back, each Pod has one cloud pod and the evicted ones none', async () => {
    for (const body of [
      virtualNodeDeployment({ name: 'short', config: 'team-e', replicas: 2, evictAfterS: 2 }),
      virtualNodeDeployment({ name: 'patient', config: 'team-e', replicas: 1 }),
    ]) {
      await admin.request(z.unknown(), { method: 'POST', path: collectionPath(deployments, NS), body });
    }
    const up = await poll(
      () => listPods(admin, NS),
      (items) => items.length === 3 && items.every(running),
      '3 Pods Running',
      90_000,
    );
    const [patient] = await podsOf('patient');
    const patientId = patient && idOf(patient);
    assert.ok(patientId, 'the patient Pod runs on a cloud pod');
    const evicted = new Set((await podsOf('short')).map((pod) => pod.metadata.name));
    assert.equal(cloudCreates(stack.sim()).length, 3);

    // The operator down: nothing renews the node's Lease.
    await operator?.stop();
    operator = undefined;
    // Unknown first, then the taint that evicts the Pods that do not tolerate it long enough.
    await poll(
      () => readNode(admin, NODE),
      (node) =>
        nodeReady(node) === 'Unknown' &&
        (node.spec.taints ?? []).some(
          (t) => t.key === 'node.kubernetes.io/unreachable' && t.effect === 'NoExecute',
        ),
      'the node NotReady (Unknown: unheard) and tainted unreachable, NoExecute',
      GRACE_SECONDS * 1000 + 30_000,
    );
    // The short Pods' 2 s run out: the taint-eviction controller deletes them, and their ReplicaSet makes
    // replacements, which wait: the node is tainted unreachable, NoSchedule too.
    const during = await poll(
      () => listPods(admin, NS),
      (items) =>
        items
          .filter((pod) => evicted.has(pod.metadata.name))
          .every((pod) => pod.metadata.deletionTimestamp) &&
        items.filter((pod) => pod.metadata.name.startsWith('short-') && !evicted.has(pod.metadata.name))
          .length === 2,
      'the short Pods evicted, 2 replacements made',
      60_000,
    );
    for (const pod of during.filter((each) => !evicted.has(each.metadata.name))) {
      if (pod.metadata.name.startsWith('short-')) assert.equal(pod.spec.nodeName, undefined, 'not placed');
      else assert.equal(pod.metadata.deletionTimestamp, undefined, 'the patient Pod is kept');
    }
    // Nobody answers for the node: the evicted Pods are held by its finalizer, their cloud pods still run.
    assert.deepEqual(livePodNames().sort(), up.map((pod) => pod.metadata.name).sort());

    // The operator back. At every look: never two cloud pods for one Pod, and never more than the 3
    // Pods before plus the 2 replacements.
    operator = await startOperator(stack.plane(), stack.sim(), {
      apiKey: 'operator-default-key',
      flags: OPERATOR_FLAGS,
    });
    let looks = 0;
    const settled = await poll(
      async () => {
        const names = livePodNames();
        assert.equal(new Set(names).size, names.length, `two cloud pods for one Pod: ${names.join(', ')}`);
        looks += 1;
        return { pods: await listPods(admin, NS), cloud: names };
      },
      ({ pods, cloud }) =>
        pods.length === 3 &&
        pods.every(running) &&
        pods.every((pod) => !evicted.has(pod.metadata.name)) &&
        cloud.length === 3,
      'the replacements Running on their own cloud pods, the evicted Pods gone',
      120_000,
    );
    assert.ok(looks > 1, 'watched while it recovered, not only at the end');
    assert.deepEqual(settled.cloud.sort(), settled.pods.map((pod) => pod.metadata.name).sort());
    const cloud = stack.sim().state.snapshot().pods;
    for (const name of evicted) {
      assert.ok(
        cloud
          .filter((p) => p.name === name)
          .every((p) => p.status === 'TERMINATED' || p.status === 'TERMINATING'),
        `the cloud pod of evicted ${name} deleted`,
      );
    }
    // The patient Pod rode the outage out on the same cloud pod, Ready again.
    const [patientAfter] = await podsOf('patient');
    assert.equal(patientAfter?.metadata.uid, patient?.metadata.uid);
    assert.equal(patientAfter && idOf(patientAfter), patientId);
    assert.equal(cloudCreates(stack.sim()).length, 5, 'one create for each replacement, none again');
    assert.equal(nodeReady(await readNode(admin, NODE)), 'True');
  });

  test('deleting the Deployments leaves no cloud pod', async () => {
    for (const name of ['short', 'patient']) {
      await admin.request(z.unknown(), {
        method: 'DELETE',
        path: objectPath(deployments, { namespace: NS, name }),
        body: { propagationPolicy: 'Foreground' },
      });
    }
    await poll(
      () => listPods(admin, NS),
      (items) => items.length === 0,
      'no Pod',
      60_000,
    );
    assert.deepEqual(livePodNames(), []);
  });
});
