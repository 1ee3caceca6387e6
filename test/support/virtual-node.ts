// What the tests of Pods on a virtual node read and build: the Pod as the node writes it, the GpuPods made
// for Pods, the cloud pods alive in the simulator, a ProviderConfig that asks for a node, and the waits for
// a node Ready and a namespace able to take Pods.
import { z } from 'zod';
import type { KubeClient } from '../../src/kube/client.ts';
import { collectionPath, leases, objectPath, pods } from '../../src/kube/resource-type.ts';
import type { RunningSimulator } from '../../src/sim/index.ts';
import { PROVIDER_CONFIG_LABEL, VIRTUAL_NODE_LABEL } from '../../src/virtual-node/names.ts';
import { resources, type Stack, useStack } from './operator.ts';
import { poll } from './until.ts';

/** The virtual node's own taint: a Pod must tolerate it to be placed there. */
/**
 * The control plane and the simulator for a virtual node's tests: the key the operator runs with, in an
 * organisation of its own, and each team's key (`{ org: key }`) in the team's, so that what a Pod makes in
 * the cloud says whose account it is.
 */
export function useTeamsStack(teams: Readonly<Record<string, string>>): Stack {
  return useStack({
    apiKeys: [
      { key: 'operator-default-key', org: 'ops' },
      ...Object.entries(teams).map(([org, key]) => ({ key, org })),
    ],
  });
}

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

/**
 * A Deployment of `replicas` one-GPU Pods on the virtual node of ProviderConfig `config`. `evictAfterS`: how
 * long its Pods tolerate the node unreachable or not ready (unset: the apiserver's default, 300 s).
 */
export function virtualNodeDeployment(options: {
  name: string;
  config: string;
  replicas: number;
  evictAfterS?: number;
  /** The container's image; a new one rolls the Deployment out. */
  image?: string;
}) {
  const { name, evictAfterS } = options;
  const outage =
    evictAfterS === undefined
      ? []
      : ['node.kubernetes.io/unreachable', 'node.kubernetes.io/not-ready'].map((key) => ({
          key,
          operator: 'Exists',
          effect: 'NoExecute',
          tolerationSeconds: evictAfterS,
        }));
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name },
    spec: {
      replicas: options.replicas,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: {
          nodeSelector: { [VIRTUAL_NODE_LABEL]: 'true', [PROVIDER_CONFIG_LABEL]: options.config },
          tolerations: [VIRTUAL_NODE_TOLERATION, ...outage],
          containers: [
            {
              name: 'main',
              image: options.image ?? `example/${name}:1`,
              resources: { limits: { 'nvidia.com/gpu': '1' } },
            },
          ],
        },
      },
    },
  };
}

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

/** The namespace's default ServiceAccount, which Pod admission wants, where no controller-manager makes it. */
export async function createDefaultServiceAccount(client: KubeClient, namespace: string): Promise<void> {
  await client.request(z.unknown(), {
    method: 'POST',
    path: `/api/v1/namespaces/${namespace}/serviceaccounts`,
    body: { metadata: { name: 'default' } },
  });
}

/** The Secret `<config>-key` of `namespace` holding an account's key, as virtualNodeProviderConfig names it. */
export async function createAccountKey(
  client: KubeClient,
  namespace: string,
  config: string,
  key: string,
): Promise<void> {
  await client.request(z.unknown(), {
    method: 'POST',
    path: `/api/v1/namespaces/${namespace}/secrets`,
    body: {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: `${config}-key` },
      stringData: { 'api-key': key },
    },
  });
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

const microTime = () => new Date().toISOString().replace('Z', '000Z');
/** How often the bystander's Lease is renewed: well within any node-monitor grace period. */
const BYSTANDER_RENEW_MS = 2_000;

/**
 * A Node that stays Ready beside the virtual one, its Lease renewed as the kubelet of any other node would:
 * with every node unheard, the node-lifecycle controller takes the fault for the control plane's and evicts
 * nothing. `stop` ends the renewals and deletes the Node and its Lease.
 */
export async function startBystanderNode(
  client: KubeClient,
  name: string,
): Promise<{ stop(): Promise<void> }> {
  await client.request(z.unknown(), {
    method: 'POST',
    path: '/api/v1/nodes',
    body: { apiVersion: 'v1', kind: 'Node', metadata: { name } },
  });
  const now = new Date().toISOString();
  await client.request(z.unknown(), {
    method: 'PATCH',
    path: `/api/v1/nodes/${name}/status`,
    body: {
      status: {
        conditions: [
          {
            type: 'Ready',
            status: 'True',
            reason: 'KubeletReady',
            message: 'a node of the cluster beside the virtual one',
            lastHeartbeatTime: now,
            lastTransitionTime: now,
          },
        ],
      },
    },
  });
  const lease = { namespace: 'kube-node-lease', name };
  await client.request(z.unknown(), {
    method: 'POST',
    path: collectionPath(leases, lease.namespace),
    body: {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name },
      spec: { holderIdentity: name, leaseDurationSeconds: 40, renewTime: microTime() },
    },
  });
  const heartbeat = setInterval(() => {
    client
      .request(z.unknown(), {
        method: 'PATCH',
        path: objectPath(leases, lease),
        body: { spec: { renewTime: microTime() } },
      })
      .catch(() => {}); // the next renewal tries again, well within the grace period
  }, BYSTANDER_RENEW_MS);
  return {
    async stop() {
      clearInterval(heartbeat);
      for (const path of [`/api/v1/nodes/${name}`, objectPath(leases, lease)]) {
        await client.request(z.unknown(), { method: 'DELETE', path }).catch(() => {}); // gone already
      }
    },
  };
}
