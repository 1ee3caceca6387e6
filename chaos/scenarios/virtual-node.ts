import { z } from 'zod';
import { collectionPath, coreEvents, deployments, objectPath, pods } from '../../src/kube/resource-type.ts';
import { sleep } from '../../src/lib/delay.ts';
import { startSchedulingCluster } from '../../src/local/node-cluster.ts';
import { nodeNameOf } from '../../src/virtual-node/names.ts';
import { resources } from '../../test/support/operator.ts';
import { poll } from '../../test/support/until.ts';
import {
  listPods,
  nodeReady,
  type Pod,
  readNode,
  startBystanderNode,
  virtualNodeDeployment,
  virtualNodeProviderConfig,
  waitForDefaultServiceAccount,
  waitForNodeReady,
} from '../../test/support/virtual-node.ts';
import { removeAccount } from '../accounts.ts';
import { audit } from '../audit.ts';
import { awaitNoProblems } from '../convergence.ts';
import { leftoverProblems, NodeGpuPods, settleProblems } from '../node-pods.ts';
import type { Random } from '../random.ts';
import { countMessages } from '../reconcile-log.ts';
import { churnResult, round, type ScenarioResult, worstOf } from '../report.ts';
import type { RunContext } from '../run-context.ts';
import { Trial } from '../trial.ts';
import { awaitLeader, killLeader, leaderElectionFlags } from './leader-failover.ts';

// Plain Deployments on a virtual node while the operator dies: two replicas under leader election, the
// leader SIGKILLed after each scale or rollout, mid-create or mid-delete (the cloud's answers held back), and one outage of
// both long enough that the node goes NotReady and the cluster's own controllers evict the Pods that do not
// tolerate it. Real kube-scheduler and kube-controller-manager, for this scenario only.

const LABEL = 'vnode';
const ACCOUNT = 'chaos-vnode';
/** Stands for the cluster's other nodes: with every node unheard, the node lifecycle evicts nothing. */
const BYSTANDER = 'chaos-bystander';
/** As in operator-crashes: kills land between a create carried out and its answer. */
const ANSWER_DELAY_MS = 400;
/**
 * The node renews its Lease every 10 s: 20 s unheard makes it NotReady, instead of the default 50 s (as in
 * test/virtual-node/eviction.test.ts). The leader changes of the scenario take about 5 s each.
 */
const GRACE_SECONDS = 20;
/** Unreachable past the grace period, the node's taint comes within a monitor period and the eviction after. */
const UNREACHABLE_WAIT_MS = GRACE_SECONDS * 1000 + 30_000;
const EVICTION_WAIT_MS = 60_000;
/** How long the Pods of the evicted Deployments tolerate the node unreachable; the others, an hour. */
const EVICT_AFTER_S = 2;
const RIDE_OUT_S = 3_600;
/** Cloud writes a change causes: the kill after it waits for the first, this long at most. */
const CLOUD_WRITES = ['pods.create', 'pods.delete'];
const WRITE_WAIT_MS = 5_000;
const LOOK_MS = 250;
/** The node's GPU capacity: room for every replica, the surge of a rollout and the evicted Pods' held ones. */
const MAX_LIVE_GPUS = 32;

interface Workload {
  readonly name: string;
  /** Its Pods tolerate the outage `EVICT_AFTER_S` only. */
  readonly evicted: boolean;
  replicas: number;
  version: number;
}

interface Outage {
  readonly downMs: number;
  /** Pods of evicted Deployments on the node when it went down: each must have been deleted. */
  readonly evicted: number;
  /** Pods of the other Deployments on the node then, and how many were still there, not deleted, after. */
  readonly patient: number;
  readonly rodeOut: number;
}

/**
 * Scenario 9. Deployments tolerating the virtual node's taint and asking for one GPU each are scaled and
 * rolled out while the leader is killed, and ride out or are evicted by one outage of both operators. At
 * every look no Pod has two live cloud pods; settled, each Running Pod has exactly one and no other is
 * live; with the Deployments deleted, none is live, and no Pod or GpuPod is held by a finalizer.
 */
export async function virtualNode(run: RunContext): Promise<ScenarioResult> {
  const scheduling = await startSchedulingCluster(run.plane, {
    controllerManagerFlags: [`--node-monitor-grace-period=${GRACE_SECONDS}s`, '--node-monitor-period=1s'],
  });
  try {
    const bystander = await startBystanderNode(run.cluster.client, BYSTANDER);
    try {
      const trial = await Trial.open(run, {
        label: LABEL,
        replicas: 2,
        answerDelayMs: ANSWER_DELAY_MS,
        flags: ['--virtual-nodes', 'true', ...leaderElectionFlags('chaos-vnode')],
      });
      try {
        return await play(run, trial);
      } finally {
        await release(run, trial);
        await trial.close();
      }
    } finally {
      await bystander.stop();
    }
  } finally {
    await scheduling.stop();
  }
}

async function play(run: RunContext, trial: Trial): Promise<ScenarioResult> {
  const startedAt = Date.now();
  const shape = run.profile.virtualNode;
  const random = run.random.fork(LABEL);
  const { client } = run.cluster;
  const node = nodeNameOf(ACCOUNT);
  await waitForDefaultServiceAccount(client, trial.namespace);
  await makeAccount(run, trial);
  await trial.startOperators();
  await waitForNodeReady(client, node, run.profile.convergeTimeoutMs);
  run.log(`${LABEL}: node ${node} Ready`);

  const gpuPods = new NodeGpuPods(trial);
  gpuPods.start(LOOK_MS);
  const workloads: Workload[] = Array.from({ length: shape.deployments }, (_, index) => ({
    name: `${index % 2 === 0 ? 'evicted' : 'patient'}-${index}`,
    evicted: index % 2 === 0,
    replicas: random.int(...shape.replicas),
    version: 1,
  }));
  for (const workload of workloads) {
    await client.request(z.unknown(), {
      method: 'POST',
      path: collectionPath(deployments, trial.namespace),
      body: manifest(workload),
    });
  }
  let ops = workloads.length;
  const outageTurn = random.int(0, shape.disruptions - 1);
  let outage: Outage | undefined;
  const takeovers: number[] = [];
  let killsMidWrite = 0;
  for (let turn = 0; turn < shape.disruptions; turn += 1) {
    if (turn === outageTurn) {
      outage = await outageOfBoth(run, trial, gpuPods, node, workloads, random);
      ops += 1;
    }
    const writes = cloudWrites(trial);
    await change(trial, random, workloads, shape.replicas);
    ops += 1;
    if (await midWrite(trial, writes, random)) killsMidWrite += 1;
    const [leader] = await awaitLeader(trial.replicas);
    if (!leader) throw new Error('no leader to kill');
    const failover = await killLeader(trial.replicas, leader.replica);
    takeovers.push(failover.tookOverAt - failover.killedAt);
  }
  run.log(`${LABEL}: disruptions done, settling`);

  const convergence = await awaitNoProblems(
    () => settleProblems(trial, gpuPods, node),
    run.profile.convergeTimeoutMs,
  );
  const atSettle = await nodeAudit(trial, gpuPods);
  const leakedKey = await apiKeyFound(run, trial);

  for (const workload of workloads) {
    await client.request(z.unknown(), {
      method: 'DELETE',
      path: objectPath(deployments, { namespace: trial.namespace, name: workload.name }),
    });
    ops += 1;
  }
  const cleanup = await awaitNoProblems(
    () => leftoverProblems(trial, gpuPods),
    run.profile.convergeTimeoutMs,
  );
  await gpuPods.stop();
  // Whatever is left now was never let go: its audit counts it stuck, and its live cloud pods leaked.
  for (const tracked of trial.ledger.live()) trial.ledger.deleted(tracked);
  const podsLeft = (await listPods(client, trial.namespace)).map((pod) => pod.metadata.name);
  const final = await nodeAudit(trial, gpuPods);
  const findings = worstOf(atSettle, {
    ...final,
    stuckFinalizers: final.stuckFinalizers + podsLeft.length,
    notes: [...final.notes, ...podsLeft.map((name) => `stuck finalizer: Pod ${name} is still there`)],
  });
  const worstTakeover = Math.max(0, ...takeovers);
  return churnResult({
    scenario: 'virtual-node',
    startedAt,
    ops,
    kills: takeovers.length + (outage ? trial.replicas.length : 0),
    convergence,
    cleanup,
    findings,
    crashes: trial.crashes,
    apiCalls: trial.sim.calls.snapshot().total,
    figures: {
      deployments: workloads.length,
      gpuPods: trial.ledger.all().length,
      leaderKills: takeovers.length,
      killsMidWrite,
      worstTakeoverS: round(worstTakeover / 1000),
      outageS: outage ? round(outage.downMs / 1000) : null,
      evicted: outage?.evicted ?? 0,
      rodeOut: outage ? `${outage.rodeOut}/${outage.patient}` : null,
      recoveredCreates: countMessages(trial.logLines(), 'made by an interrupted create'),
    },
    violations: [
      ...(outage && outage.evicted > 0 ? [] : ['the outage evicted no Pod: eviction went untested']),
      ...(takeovers.some((ms) => ms < 0) ? ['a takeover before the old leader was dead: two leaders'] : []),
      ...leakedKey,
    ],
  });
}

/** The Secret holding the run's API key, and the ProviderConfig asking for a node, for this namespace. */
async function makeAccount(run: RunContext, trial: Trial): Promise<void> {
  await run.cluster.create(resources.secret, trial.namespace, {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: `${ACCOUNT}-key` },
    stringData: { 'api-key': run.apiKey },
  });
  const config = virtualNodeProviderConfig({
    name: ACCOUNT,
    namespace: trial.namespace,
    apiUrl: trial.apiUrl,
    keyNamespace: trial.namespace,
  });
  await run.cluster.create(resources.providerConfig, '', {
    ...config,
    spec: { ...config.spec, guardrails: { ...config.spec.guardrails, maxLiveGpus: MAX_LIVE_GPUS } },
  });
}

function manifest(workload: Workload) {
  return virtualNodeDeployment({
    name: workload.name,
    config: ACCOUNT,
    replicas: workload.replicas,
    image: `example/${workload.name}:${workload.version}`,
    evictAfterS: workload.evicted ? EVICT_AFTER_S : RIDE_OUT_S,
  });
}

/** A rollout (a new image) or a scale to another count, of one Deployment drawn from `among`. */
async function change(
  trial: Trial,
  random: Random,
  among: readonly Workload[],
  replicas: readonly [number, number],
): Promise<void> {
  const workload = random.pick(among);
  const counts = Array.from({ length: replicas[1] - replicas[0] + 1 }, (_, i) => replicas[0] + i).filter(
    (count) => count !== workload.replicas,
  );
  if (counts.length === 0 || random.chance(1 / 3)) workload.version += 1;
  else workload.replicas = random.pick(counts);
  await trial.cluster.client.request(z.unknown(), {
    method: 'PATCH',
    path: objectPath(deployments, { namespace: trial.namespace, name: workload.name }),
    body: { spec: manifest(workload).spec },
  });
}

/** Pod creates and deletes the cloud received. */
function cloudWrites(trial: Trial): number {
  const { byOperation } = trial.sim.calls.snapshot();
  return CLOUD_WRITES.reduce((sum, operation) => sum + (byOperation[operation] ?? 0), 0);
}

/**
 * Waits until the cloud received a write beyond the `before` first, then up to half the answer delay: a
 * kill then lands after the create or delete was carried out and before its answer reached the operator.
 * False if no write came within WRITE_WAIT_MS (a change that waits for capacity, say).
 */
async function midWrite(trial: Trial, before: number, random: Random): Promise<boolean> {
  const deadline = Date.now() + WRITE_WAIT_MS;
  while (cloudWrites(trial) === before) {
    if (Date.now() > deadline) return false;
    await sleep(20);
  }
  await sleep(random.between(0, ANSWER_DELAY_MS / 2));
  return true;
}

/**
 * Once every Pod runs, both operators killed until the node is NotReady and tainted, the Pods of the evicted Deployments on it
 * deleted by the taint eviction, and a change made meanwhile (its new Pods wait for the node); then both
 * started again.
 */
async function outageOfBoth(
  run: RunContext,
  trial: Trial,
  gpuPods: NodeGpuPods,
  node: string,
  workloads: readonly Workload[],
  random: Random,
): Promise<Outage> {
  const { client } = run.cluster;
  // The Pods up and running on the node first, as in any outage worth the name: none would be evicted
  // while the scheduler had not placed them yet.
  await awaitNoProblems(() => settleProblems(trial, gpuPods, node), run.profile.convergeTimeoutMs);
  const isEvicted = (pod: Pod) =>
    workloads.some((w) => w.evicted && pod.metadata.name.startsWith(`${w.name}-`));
  const onNode = (await listPods(client, trial.namespace)).filter(
    (pod) => pod.spec.nodeName === node && !pod.metadata.deletionTimestamp,
  );
  const toEvict = onNode.filter(isEvicted).map((pod) => pod.metadata.uid);
  const patient = onNode.filter((pod) => !isEvicted(pod)).map((pod) => pod.metadata.uid);
  const downAt = Date.now();
  await Promise.all(trial.replicas.map((replica) => replica.kill()));
  run.log(`${LABEL}: both operators down, ${toEvict.length} Pod(s) to evict`);
  await poll(
    () => readNode(client, node),
    (view) =>
      nodeReady(view) === 'Unknown' &&
      (view.spec.taints ?? []).some(
        (t) => t.key === 'node.kubernetes.io/unreachable' && t.effect === 'NoExecute',
      ),
    `node ${node} unheard and tainted unreachable, NoExecute`,
    UNREACHABLE_WAIT_MS,
  );
  await change(
    trial,
    random,
    workloads.filter((w) => w.evicted),
    run.profile.virtualNode.replicas,
  );
  const during = await poll(
    () => listPods(client, trial.namespace),
    (pods) =>
      toEvict.every((uid) => {
        const pod = pods.find((each) => each.metadata.uid === uid);
        return pod === undefined || pod.metadata.deletionTimestamp !== undefined;
      }),
    `the ${toEvict.length} Pod(s) of the evicted Deployments deleted`,
    EVICTION_WAIT_MS,
  );
  const rodeOut = patient.filter((uid) =>
    during.some((pod) => pod.metadata.uid === uid && pod.metadata.deletionTimestamp === undefined),
  ).length;
  await trial.startOperators();
  run.log(`${LABEL}: operators back after ${round((Date.now() - downAt) / 1000)} s`);
  return { downMs: Date.now() - downAt, evicted: toEvict.length, patient: patient.length, rodeOut };
}

/** The audit of the GpuPods the node made, plus any Pod that had more than one. */
async function nodeAudit(trial: Trial, gpuPods: NodeGpuPods) {
  await gpuPods.look();
  const findings = audit(trial.ledger, await trial.observe(), trial.history);
  const extra = gpuPods.extraPerPod();
  return {
    ...findings,
    duplicates: findings.duplicates + extra.duplicates,
    notes: [...findings.notes, ...extra.notes],
  };
}

/** The run's API key in this scenario's operator output, its Pods, GpuPods, Events or the Node. */
async function apiKeyFound(run: RunContext, trial: Trial): Promise<string[]> {
  const { client } = run.cluster;
  const list = (path: string) => client.request(z.unknown(), { method: 'GET', path }).then(JSON.stringify);
  const written = [
    ...run.transcripts
      .all()
      .filter(({ label }) => label.startsWith(`${LABEL}-`))
      .map(({ label, text }) => ({ where: `operator ${label}`, text })),
    { where: 'Pods', text: await list(collectionPath(pods, trial.namespace)) },
    { where: 'GpuPods', text: await list(collectionPath(resources.gpuPod, trial.namespace)) },
    { where: 'Events', text: await list(collectionPath(coreEvents, trial.namespace)) },
    { where: 'the Node', text: JSON.stringify(await readNode(client, nodeNameOf(ACCOUNT))) },
  ];
  return written
    .filter(({ text }) => text.includes(run.apiKey))
    .map(({ where }) => `the API key found in ${where}`);
}

/**
 * Lets the scenario's cluster-wide objects go whatever happened: the ProviderConfig (its operator deletes
 * the Node), the Node if it stayed, and Pods a dead node still held by its finalizer.
 */
async function release(run: RunContext, trial: Trial): Promise<void> {
  const { cluster } = run;
  if (!(await removeAccount(cluster, trial.namespace, ACCOUNT))) {
    run.log(`${LABEL}: ProviderConfig ${ACCOUNT} released by hand`);
  }
  await cluster.client
    .request(z.unknown(), { method: 'DELETE', path: `/api/v1/nodes/${nodeNameOf(ACCOUNT)}` })
    .catch(() => undefined); // deleted with its ProviderConfig already
  for (const pod of await listPods(cluster.client, trial.namespace)) {
    const path = objectPath(pods, { namespace: trial.namespace, name: pod.metadata.name });
    await cluster.client.request(z.unknown(), {
      method: 'PATCH',
      path,
      body: { metadata: { finalizers: null } },
    });
    await cluster.client.request(z.unknown(), { method: 'DELETE', path }).catch(() => undefined);
  }
}
