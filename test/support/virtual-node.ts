// What the tests of Pods on a virtual node read and build: the Pod as the node writes it, the GpuPods made
// for Pods, the cloud pods alive in the simulator, a ProviderConfig that asks for a node, and the waits for
// a node Ready and a namespace able to take Pods.
import { z } from 'zod';
import type { KubeClient } from '../../src/kube/client.ts';
import { collectionPath, objectPath, pods } from '../../src/kube/resource-type.ts';
import type { RunningSimulator } from '../../src/sim/index.ts';
import { resources } from './operator.ts';
import { poll } from './until.ts';

/** The virtual node's own taint: a Pod must tolerate it to be placed there. */
export const VIRTUAL_NODE_TOLERATION = {
  key: 'gpucloud.io/virtual-node',
  operator: 'Exists',
  effect: 'NoSchedule',
};

export const podSchema = z.looseObject({
  metadata: z.looseObject({
    name: z.string(),
    uid: z.string(),
    deletionTimestamp: z.string().optional(),
    annotations: z.record(z.string(), z.string()).optional(),
    finalizers: z.array(z.string()).optional(),
  }),
  spec: z.looseObject({ nodeName: z.string().optional() }),
  status: z.looseObject({
    phase: z.string(),
    reason: z.string().optional(),
    message: z.string().optional(),
    hostIP: z.string().optional(),
    conditions: z.array(z.looseObject({ type: z.string(), status: z.string() })).optional(),
    containerStatuses: z
      .array(
        z.looseObject({
          containerID: z.string().optional(),
          ready: z.boolean(),
          state: z.record(z.string(), z.looseObject({ reason: z.string().optional() })),
        }),
      )
      .optional(),
  }),
});
export type Pod = z.output<typeof podSchema>;
const podList = z.object({ items: z.array(podSchema) });

const gpuPodList = z.object({
  items: z.array(
    z.looseObject({
      metadata: z.looseObject({ name: z.string(), labels: z.record(z.string(), z.string()).optional() }),
      spec: z.looseObject({ image: z.string(), paused: z.boolean().optional() }),
      status: z.looseObject({ id: z.string().optional() }).optional(),
    }),
  ),
});

const nodeSchema = z.looseObject({
  spec: z.looseObject({
    taints: z.array(z.looseObject({ key: z.string(), effect: z.string() })).optional(),
  }),
  status: z
    .looseObject({
      conditions: z.array(z.looseObject({ type: z.string(), status: z.string() })).optional(),
    })
    .optional(),
});
export type NodeView = z.output<typeof nodeSchema>;

export const listPods = async (client: KubeClient, namespace: string) =>
  (await client.request(podList, { method: 'GET', path: collectionPath(pods, namespace) })).items;

export const readPod = (client: KubeClient, namespace: string, name: string) =>
  client.request(podSchema, { method: 'GET', path: objectPath(pods, { namespace, name }) });

export const listGpuPods = async (client: KubeClient, namespace: string) =>
  (await client.request(gpuPodList, { method: 'GET', path: collectionPath(resources.gpuPod, namespace) }))
    .items;

export const readNode = (client: KubeClient, name: string) =>
  client.request(nodeSchema, { method: 'GET', path: `/api/v1/nodes/${name}` });

/** The Node's Ready condition's status: `True`, `False`, `Unknown` (the node-lifecycle's, when unheard). */
export const nodeReady = (node: NodeView | undefined) =>
  node?.status?.conditions?.find((c) => c.type === 'Ready')?.status;

/** The cloud pods alive in the simulator. */
export const liveCloudPods = (sim: RunningSimulator) =>
  sim.state.snapshot().pods.filter((pod) => pod.status !== 'TERMINATED' && pod.status !== 'TERMINATING');

/** Create calls the simulator received (placement's offer searches left out): a refusal must make none. */
export const cloudCreates = (sim: RunningSimulator) =>
  sim.calls.log().filter((call) => call.method === 'POST' && !call.operation.includes('search'));

/** Running, and its one container ready: what the node writes once the cloud pod runs. */
export const running = (pod: Pod) =>
  pod.status.phase === 'Running' && pod.status.containerStatuses?.[0]?.ready === true;

/** A ProviderConfig whose account runs Pods of `namespace` on its virtual node, `gpucloud-<name>`. */
export function virtualNodeProviderConfig(options: {
  name: string;
  namespace: string;
  apiUrl: string;
  /** Where its `<name>-key` Secret is. */
  keyNamespace: string;
}) {
  return {
    apiVersion: 'gpucloud.io/v1alpha1',
    kind: 'ProviderConfig',
    metadata: { name: options.name },
    spec: {
      apiUrl: options.apiUrl,
      credentials: {
        secretRef: { namespace: options.keyNamespace, name: `${options.name}-key`, key: 'api-key' },
      },
      namespaces: { names: [options.namespace] },
      guardrails: { gpuTypes: ['NVIDIA L40S', 'NVIDIA GeForce RTX 4090'], maxLiveGpus: 12 },
      virtualNode: { enabled: true },
    },
  };
}

export async function waitForNodeReady(client: KubeClient, name: string, timeoutMs = 60_000): Promise<void> {
  await poll(
    () => readNode(client, name).catch(() => undefined),
    (node) => nodeReady(node) === 'True',
    `node ${name} Ready`,
    timeoutMs,
  );
}

/** The default ServiceAccount that Pod admission wants, made by the controller-manager. */
export async function waitForDefaultServiceAccount(client: KubeClient, namespace: string): Promise<void> {
  await poll(
    () =>
      client
        .request(z.unknown(), {
          method: 'GET',
          path: `/api/v1/namespaces/${namespace}/serviceaccounts/default`,
        })
        .catch(() => undefined),
    (found) => found !== undefined,
    `the default ServiceAccount of ${namespace}`,
  );
}
