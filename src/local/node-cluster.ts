// What turns a local control plane into a cluster that runs Pods: kube-scheduler, kube-controller-manager
// with the cluster's controllers and those a workload needs (node lifecycle, the kube-root-ca.crt ConfigMap
// that every Pod's token volume mounts, Deployments, ReplicaSets), and, for `npm run local --node` and the
// tests that run Pods on this machine, a real node. Without it, Pods are placed on the virtual nodes.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { CoreV1Api } from '@kubernetes/client-node';
import {
  CLUSTER_CONTROLLERS,
  type RunningControllerManager,
  startControllerManager,
} from './controller-manager.ts';
import type { ControlPlane } from './controlplane.ts';
import { type LocalNode, type NodeOptions, startNode } from './node.ts';
import { type RunningScheduler, startScheduler } from './scheduler.ts';

/** What a node needs of kube-controller-manager beyond the cluster's own controllers (CLUSTER_CONTROLLERS). */
export const NODE_CONTROLLERS = [
  // Lifts the not-ready taint a node registers with once the node is Ready, as in any cluster.
  'node-lifecycle-controller',
  // The kube-root-ca.crt ConfigMap in every namespace, which every Pod's token volume mounts.
  'root-ca-certificate-publisher-controller',
  'deployment-controller',
  'replicaset-controller',
  // A Service's EndpointSlices: the addresses of its ready Pods, which is all there is to reach it by
  // (no kube-proxy here).
  'endpointslice-controller',
  // A PodDisruptionBudget's status, which the eviction API (`kubectl drain`) reads to allow or refuse.
  'disruption-controller',
  // Deletes the Pods of a node tainted NoExecute (unreachable, not ready) once their toleration runs out,
  // as any cluster does: what a virtual node whose operator is down does to its Pods.
  'taint-eviction-controller',
];

export interface SchedulingOptions {
  /** Appended to kube-controller-manager's command line, e.g. a shorter `--node-monitor-grace-period`. */
  readonly controllerManagerFlags?: readonly string[];
}

/** kube-controller-manager (the cluster's controllers and a workload's) and kube-scheduler, both running. */
export interface SchedulingCluster {
  scheduler: RunningScheduler;
  controllerManager: RunningControllerManager;
  /** Stops the scheduler and the controllers. Idempotent. */
  stop(): Promise<void>;
}

export interface NodeCluster extends SchedulingCluster {
  node: LocalNode;
  /** Stops the node, then the scheduler and the controllers. Idempotent. */
  stop(): Promise<void>;
}

/**
 * What places Pods on nodes, a virtual node's included: kube-controller-manager with CLUSTER_CONTROLLERS and
 * NODE_CONTROLLERS, and kube-scheduler, started side by side (each waits for its own readiness).
 */
export async function startSchedulingCluster(
  plane: ControlPlane,
  options: SchedulingOptions = {},
): Promise<SchedulingCluster> {
  const rootCaFile = join(plane.dataDir, 'serving-ca.crt');
  await writeFile(rootCaFile, plane.servingCaPem);
  const [controllers, scheduling] = await Promise.allSettled([
    startControllerManager(plane, {
      controllers: [...CLUSTER_CONTROLLERS, ...NODE_CONTROLLERS],
      // The CA the root-ca-certificate-publisher puts in every namespace's kube-root-ca.crt.
      flags: [`--root-ca-file=${rootCaFile}`, ...(options.controllerManagerFlags ?? [])],
    }),
    startScheduler(plane),
  ]);
  if (controllers.status === 'rejected' || scheduling.status === 'rejected') {
    if (controllers.status === 'fulfilled') await controllers.value.stop();
    if (scheduling.status === 'fulfilled') await scheduling.value.stop();
    throw controllers.status === 'rejected'
      ? controllers.reason
      : (scheduling as PromiseRejectedResult).reason;
  }
  const controllerManager = controllers.value;
  const scheduler = scheduling.value;
  let stopped: Promise<void> | undefined;
  const stop = () => (stopped ??= scheduler.stop().then(() => controllerManager.stop()));
  return { scheduler, controllerManager, stop };
}

export async function startNodeCluster(plane: ControlPlane, options: NodeOptions = {}): Promise<NodeCluster> {
  const scheduling = await startSchedulingCluster(plane);
  let node: LocalNode | undefined;
  const stopAll = async () => {
    await node?.stop();
    await scheduling.stop();
  };
  try {
    node = await startNode(plane, options);
    await untainted(plane, node.name);
    let stopped: Promise<void> | undefined;
    return { ...scheduling, node, stop: () => (stopped ??= stopAll()) };
  } catch (error) {
    await stopAll();
    throw error;
  }
}

const UNTAINT_TIMEOUT_MS = 60_000;

/** Waits until the node has no NoSchedule taint left: until the scheduler may place Pods on it. */
async function untainted(plane: ControlPlane, name: string): Promise<void> {
  const api = plane.kubeConfig.makeApiClient(CoreV1Api);
  const deadline = Date.now() + UNTAINT_TIMEOUT_MS;
  for (;;) {
    const taints = (await api.readNode({ name })).spec?.taints ?? [];
    const blocking = taints.filter((taint) => taint.effect === 'NoSchedule');
    if (blocking.length === 0) return;
    if (Date.now() >= deadline) {
      throw new Error(
        `Node ${name} kept its taints ${blocking.map((t) => t.key).join(', ')} for ${UNTAINT_TIMEOUT_MS / 1000}s`,
      );
    }
    await delay(200);
  }
}
