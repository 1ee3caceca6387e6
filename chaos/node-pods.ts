import { z } from 'zod';
import { collectionPath, deployments } from '../src/kube/resource-type.ts';
import { POD_UID_LABEL } from '../src/virtual-node/names.ts';
import { resources } from '../test/support/operator.ts';
import { listPods, nodeReady, type Pod, readNode, running } from '../test/support/virtual-node.ts';
import type { Findings } from './audit.ts';
import { cloudObjects } from './cloud-objects.ts';
import type { Trial } from './trial.ts';

const gpuPodList = z.object({
  items: z.array(
    z.looseObject({
      metadata: z.looseObject({
        name: z.string(),
        uid: z.string(),
        generation: z.number().optional(),
        labels: z.record(z.string(), z.string()).optional(),
      }),
      spec: z.record(z.string(), z.unknown()).optional(),
    }),
  ),
});

const deploymentList = z.object({
  items: z.array(
    z.looseObject({
      metadata: z.looseObject({ name: z.string(), generation: z.number() }),
      spec: z.looseObject({ replicas: z.number() }),
      status: z
        .looseObject({
          observedGeneration: z.number().optional(),
          replicas: z.number().optional(),
          updatedReplicas: z.number().optional(),
          readyReplicas: z.number().optional(),
        })
        .optional(),
    }),
  ),
});

/**
 * The GpuPods a virtual node makes for its Pods, found by listing them (the suite makes none itself): each
 * is entered in the trial's ledger when first seen and marked deleted once gone, so that the audit counts
 * its cloud pods as for any GpuPod, and the Pod it is for is remembered from its `gpucloud.io/pod-uid` label.
 */
export class NodeGpuPods {
  readonly #trial: Trial;
  /** GpuPod uid → the uid of the Pod it was made for. */
  readonly #podOf = new Map<string, string>();
  #looking: Promise<void> | undefined;
  #lastLook: Promise<void> = Promise.resolve();
  #stopped = false;

  constructor(trial: Trial) {
    this.#trial = trial;
  }

  /** Looks every `intervalMs` until `stop`. */
  start(intervalMs: number): void {
    const loop = async () => {
      while (!this.#stopped) {
        // A failed list is tried again at the next look; the apiserver is not disrupted here.
        await this.look().catch(() => undefined);
        await new Promise((resolve) => setTimeout(resolve, intervalMs));
      }
    };
    this.#looking = loop();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    await this.#looking;
    await this.look();
  }

  /**
   * Lists the GpuPods, enters the new ones, marks the gone ones, then samples the cloud. One look at a time:
   * a list older than another's would take the GpuPods the other just entered for gone.
   */
  look(): Promise<void> {
    const next = this.#lastLook.then(() => this.#lookNow());
    this.#lastLook = next.catch(() => undefined); // the failed look's caller sees the error
    return next;
  }

  async #lookNow(): Promise<void> {
    const { cluster, ledger, namespace, history } = this.#trial;
    const { items } = await cluster.client.request(gpuPodList, {
      method: 'GET',
      path: collectionPath(resources.gpuPod, namespace),
    });
    const present = new Set(items.map((item) => item.metadata.uid));
    for (const item of items) {
      if (ledger.byUid(item.metadata.uid)) continue;
      ledger.created('GpuPod', item.metadata.name, { metadata: item.metadata, spec: item.spec });
      const pod = item.metadata.labels?.[POD_UID_LABEL];
      if (pod !== undefined) this.#podOf.set(item.metadata.uid, pod);
    }
    for (const tracked of ledger.live()) if (!present.has(tracked.uid)) ledger.deleted(tracked);
    history.sample();
  }

  /** The Pod a GpuPod was made for, by the GpuPod's uid. */
  podOf(gpuPodUid: string): string | undefined {
    return this.#podOf.get(gpuPodUid);
  }

  /**
   * GpuPods made beyond the first for one Pod: the node makes one per Pod, and nothing in the scenario
   * deletes one behind its Pod's back, so a second is a second cloud pod in the making.
   */
  extraPerPod(): Findings {
    const perPod = new Map<string, number>();
    for (const pod of this.#podOf.values()) perPod.set(pod, (perPod.get(pod) ?? 0) + 1);
    const extra = [...perPod].filter(([, count]) => count > 1);
    return {
      duplicates: extra.reduce((sum, [, count]) => sum + count - 1, 0),
      leaks: 0,
      stuckFinalizers: 0,
      notes: extra.map(([pod, count]) => `duplicate: Pod uid ${pod} had ${count} GpuPods made for it`),
    };
  }
}

/** What the scenario reads of the namespace at one instant. */
export interface NodeLook {
  readonly pods: readonly Pod[];
  /** Live cloud pods by the uid of the Pod they were made for (`undefined`: of no Pod known). */
  readonly cloudByPod: ReadonlyMap<string | undefined, readonly string[]>;
  readonly liveCloud: number;
}

export async function lookAtNode(trial: Trial, gpuPods: NodeGpuPods): Promise<NodeLook> {
  await gpuPods.look();
  const pods = await listPods(trial.cluster.client, trial.namespace);
  const cloudByPod = new Map<string | undefined, string[]>();
  const live = cloudObjects(trial.sim.state.snapshot()).filter((o) => o.kind === 'GpuPod' && o.live);
  for (const object of live) {
    const pod = object.marker === undefined ? undefined : gpuPods.podOf(object.marker);
    cloudByPod.set(pod, [...(cloudByPod.get(pod) ?? []), object.id]);
  }
  return { pods, cloudByPod, liveCloud: live.length };
}

/**
 * Why the node's world is not settled, or none when it is: the node Ready and untainted by the node
 * lifecycle, every Deployment rolled out with all its replicas ready, no Pod terminating, every Pod
 * Running on exactly one live cloud pod, and no other cloud pod live.
 */
export async function settleProblems(trial: Trial, gpuPods: NodeGpuPods, node: string): Promise<string[]> {
  const problems: string[] = [];
  const { client } = trial.cluster;
  const nodeView = await readNode(client, node);
  const ready = nodeReady(nodeView);
  if (ready !== 'True') problems.push(`node ${node} Ready is ${ready}`);
  const lifecycleTaints = (nodeView.spec.taints ?? [])
    .map((taint) => taint.key)
    .filter((key) => key.startsWith('node.kubernetes.io/'));
  if (lifecycleTaints.length > 0) problems.push(`node ${node} tainted ${lifecycleTaints.join(', ')}`);
  const { items } = await client.request(deploymentList, {
    method: 'GET',
    path: collectionPath(deployments, trial.namespace),
  });
  for (const { metadata, spec, status } of items) {
    const done =
      status?.observedGeneration === metadata.generation &&
      status.replicas === spec.replicas &&
      status.updatedReplicas === spec.replicas &&
      (status.readyReplicas ?? 0) === spec.replicas;
    if (!done) problems.push(`Deployment ${metadata.name}: ${JSON.stringify(status)} for ${spec.replicas}`);
  }
  const look = await lookAtNode(trial, gpuPods);
  let owned = 0;
  for (const pod of look.pods) {
    const { name, uid, deletionTimestamp } = pod.metadata;
    const cloud = look.cloudByPod.get(uid) ?? [];
    owned += cloud.length;
    if (deletionTimestamp) problems.push(`Pod ${name} terminating, ${cloud.length} live cloud pod(s)`);
    else if (!running(pod)) problems.push(`Pod ${name} is ${pod.status.phase}, not Running and ready`);
    else if (cloud.length !== 1) problems.push(`Pod ${name} Running on ${cloud.length} live cloud pods`);
  }
  if (look.liveCloud > owned) problems.push(`${look.liveCloud - owned} live cloud pod(s) of no Pod there`);
  return problems;
}

/** Why the namespace is not empty yet once the Deployments are deleted: Pods, GpuPods or live cloud pods. */
export async function leftoverProblems(trial: Trial, gpuPods: NodeGpuPods): Promise<string[]> {
  const look = await lookAtNode(trial, gpuPods);
  const gpuPodsLeft = trial.ledger.live().length;
  return [
    ...look.pods.map((pod) => `Pod ${pod.metadata.name} still there (${pod.metadata.finalizers ?? []})`),
    ...(gpuPodsLeft > 0 ? [`${gpuPodsLeft} GpuPod(s) still there`] : []),
    ...(look.liveCloud > 0 ? [`${look.liveCloud} cloud pod(s) live`] : []),
  ];
}
