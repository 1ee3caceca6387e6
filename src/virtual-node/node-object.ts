// The Node a virtual node is, as a kubelet would register and report it: labels, taint, owner, and a status
// of conditions, addresses, daemon endpoint, capacity and node info. Pure: the controller writes it.
import { z } from 'zod';
import { objectMetaSchema } from '../kube/object.ts';
import type { NodeCapacity } from './capacity.ts';
import {
  DRAINING_ANNOTATION,
  fitsLabelValue,
  GPU_TYPE_LABEL_PREFIX,
  KUBELET_PORT_ANNOTATION,
  PROVIDER_CONFIG_ANNOTATION,
  PROVIDER_CONFIG_LABEL,
  placeLabel,
  REGION_LABEL_PREFIX,
  VIRTUAL_NODE_LABEL,
  VIRTUAL_NODE_TAINT,
} from './names.ts';

const conditionSchema = z.looseObject({
  type: z.string(),
  status: z.string(),
  reason: z.string().optional(),
  message: z.string().optional(),
  lastHeartbeatTime: z.string().nullish(),
  lastTransitionTime: z.string().nullish(),
});
export type NodeCondition = z.output<typeof conditionSchema>;

const taintSchema = z.looseObject({ key: z.string(), value: z.string().optional(), effect: z.string() });
export type Taint = z.output<typeof taintSchema>;

/** The parts of a Node the controller reads; the rest is kept as the apiserver sends it. */
export const nodeSchema = z.looseObject({
  metadata: objectMetaSchema,
  spec: z
    .looseObject({ taints: z.array(taintSchema).nullish(), unschedulable: z.boolean().nullish() })
    .optional(),
  status: z
    .looseObject({
      conditions: z.array(conditionSchema).nullish(),
      addresses: z.array(z.looseObject({ type: z.string(), address: z.string() })).nullish(),
      capacity: z.record(z.string(), z.string()).nullish(),
      allocatable: z.record(z.string(), z.string()).nullish(),
      daemonEndpoints: z.looseObject({ kubeletEndpoint: z.looseObject({ Port: z.number() }) }).nullish(),
    })
    .optional(),
});
export type StoredNode = z.output<typeof nodeSchema>;

/** What the node is made of, gathered by the controller. */
export interface NodeFacts {
  readonly name: string;
  readonly config: { readonly name: string; readonly uid: string };
  readonly capacity: NodeCapacity;
  /** Whether the account can place now, in words a tenant may read (never the cloud's own). */
  readonly ready: { readonly ok: boolean; readonly reason: string; readonly message: string };
  /** Where the kubelet API of the node serves: the operator's address, and the node's port (0: none). */
  readonly address: string;
  readonly port: number;
  readonly version: string;
}

export const TAINT: Taint = { key: VIRTUAL_NODE_TAINT, value: 'true', effect: 'NoSchedule' };

/** Labels the controller sets and takes away; any other label on the node is left alone. */
export function ownsLabel(key: string): boolean {
  return key.startsWith(GPU_TYPE_LABEL_PREFIX) || key.startsWith(REGION_LABEL_PREFIX);
}

export function nodeLabels(facts: NodeFacts): Record<string, string> {
  const places = (prefix: string, values: readonly string[]) =>
    values.flatMap((value) => {
      const key = placeLabel(prefix, value);
      return key ? [[key, 'true'] as const] : [];
    });
  return {
    type: 'virtual-kubelet',
    'kubernetes.io/role': 'agent',
    'kubernetes.io/hostname': facts.name,
    'kubernetes.io/os': 'linux',
    'kubernetes.io/arch': 'amd64',
    'node.kubernetes.io/exclude-from-external-load-balancers': 'true',
    [VIRTUAL_NODE_LABEL]: 'true',
    ...(fitsLabelValue(facts.config.name) ? { [PROVIDER_CONFIG_LABEL]: facts.config.name } : {}),
    ...Object.fromEntries(places(GPU_TYPE_LABEL_PREFIX, facts.capacity.gpuTypes)),
    ...Object.fromEntries(places(REGION_LABEL_PREFIX, facts.capacity.regions)),
  };
}

/** The Node to create: its status follows in a write of its own (nodes/status). */
export function newNode(facts: NodeFacts): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name: facts.name,
      labels: nodeLabels(facts),
      annotations: { [PROVIDER_CONFIG_ANNOTATION]: facts.config.name, ...portAnnotation(facts) },
      // The ProviderConfig owns it: deleted with it, by the garbage collector, even with the operator down.
      ownerReferences: [
        {
          apiVersion: 'gpucloud.io/v1alpha1',
          kind: 'ProviderConfig',
          name: facts.config.name,
          uid: facts.config.uid,
        },
      ],
    },
    spec: { taints: [TAINT] },
  };
}

/** The node's port, recorded where a restart or the next leader finds it; none while it has no port. */
function portAnnotation(facts: NodeFacts): Record<string, string> {
  return facts.port === 0 ? {} : { [KUBELET_PORT_ANNOTATION]: String(facts.port) };
}

/**
 * The metadata and spec patch that brings `node` to `facts` (labels it lacks or holds wrongly, ours that
 * no longer apply, the taint if it went, its port), or undefined when it is already there. Taints others set (the
 * node-lifecycle controller's) are kept: the patch carries the resourceVersion it was computed from.
 */
export function nodePatch(node: StoredNode, facts: NodeFacts): Record<string, unknown> | undefined {
  const want = nodeLabels(facts);
  const have = node.metadata.labels ?? {};
  const labels: Record<string, string | null> = {};
  for (const [key, value] of Object.entries(want)) if (have[key] !== value) labels[key] = value;
  for (const key of Object.keys(have)) if (ownsLabel(key) && !(key in want)) labels[key] = null;
  const annotations: Record<string, string | null> = Object.fromEntries(
    Object.entries(portAnnotation(facts)).filter(
      ([key, value]) => node.metadata.annotations?.[key] !== value,
    ),
  );
  // Turned on again while it drained: the cordon was ours, so it goes (a cordon by hand stays).
  const drained = node.metadata.annotations?.[DRAINING_ANNOTATION] !== undefined;
  if (drained) annotations[DRAINING_ANNOTATION] = null;
  const taints = node.spec?.taints ?? [];
  const tainted = taints.some((t) => t.key === TAINT.key && t.effect === TAINT.effect);
  if (Object.keys(labels).length === 0 && Object.keys(annotations).length === 0 && tainted) return undefined;
  return {
    metadata: {
      resourceVersion: node.metadata.resourceVersion,
      labels,
      ...(Object.keys(annotations).length === 0 ? {} : { annotations }),
    },
    ...(tainted && !drained
      ? {}
      : {
          spec: {
            ...(tainted ? {} : { taints: [...taints, TAINT] }),
            ...(drained ? { unschedulable: false } : {}),
          },
        }),
  };
}

/** Cordons the node for its deregistration, marked as the operator's cordon; undefined when it is. */
export function cordonPatch(node: StoredNode): Record<string, unknown> | undefined {
  if (node.metadata.annotations?.[DRAINING_ANNOTATION] !== undefined && node.spec?.unschedulable) {
    return undefined;
  }
  return {
    metadata: {
      resourceVersion: node.metadata.resourceVersion,
      annotations: { [DRAINING_ANNOTATION]: 'true' },
    },
    spec: { unschedulable: true },
  };
}

type ConditionFacts = Pick<NodeCondition, 'type' | 'status' | 'reason' | 'message'>;

/** The kubelet's five conditions: Ready as the account is, no pressure of any kind (the cloud has room). */
function conditionsOf(facts: NodeFacts): ConditionFacts[] {
  const { ready } = facts;
  return [
    { type: 'Ready', status: ready.ok ? 'True' : 'False', reason: ready.reason, message: ready.message },
    {
      type: 'MemoryPressure',
      status: 'False',
      reason: 'KubeletHasSufficientMemory',
      message: 'gpucloud pods run remotely',
    },
    {
      type: 'DiskPressure',
      status: 'False',
      reason: 'KubeletHasNoDiskPressure',
      message: 'gpucloud pods run remotely',
    },
    {
      type: 'PIDPressure',
      status: 'False',
      reason: 'KubeletHasSufficientPID',
      message: 'gpucloud pods run remotely',
    },
    {
      type: 'NetworkUnavailable',
      status: 'False',
      reason: 'RouteCreated',
      message: 'gpucloud pods are reached through the cloud',
    },
  ];
}

/**
 * The node's status as of `now`: heartbeats now, each condition's transition time kept from `current` while
 * its status stays.
 */
export function nodeStatus(
  facts: NodeFacts,
  current: StoredNode | undefined,
  now: Date,
): Record<string, unknown> {
  const stamp = now.toISOString().replace(/\.\d{3}Z$/, 'Z');
  const before = current?.status?.conditions ?? [];
  return {
    conditions: conditionsOf(facts).map((condition) => {
      const previous = before.find((each) => each.type === condition.type);
      const kept = previous?.status === condition.status ? previous.lastTransitionTime : undefined;
      return { ...condition, lastHeartbeatTime: stamp, lastTransitionTime: kept ?? stamp };
    }),
    addresses: [
      { type: 'InternalIP', address: facts.address },
      { type: 'Hostname', address: facts.name },
    ],
    daemonEndpoints: { kubeletEndpoint: { Port: facts.port } },
    capacity: facts.capacity.resources,
    allocatable: facts.capacity.resources,
    nodeInfo: {
      machineID: '',
      systemUUID: '',
      bootID: '',
      kernelVersion: '',
      osImage: 'gpucloud',
      containerRuntimeVersion: 'gpucloud://',
      kubeletVersion: facts.version,
      kubeProxyVersion: '',
      operatingSystem: 'linux',
      architecture: 'amd64',
    },
  };
}

/** Whether `node`'s status says something other than `facts` (heartbeat times aside). */
export function statusDiffers(node: StoredNode, facts: NodeFacts): boolean {
  const status = node.status;
  const conditions = (status?.conditions ?? []).map(({ type, status: value, reason, message }) => ({
    type,
    status: value,
    reason,
    message,
  }));
  const want = nodeStatus(facts, node, new Date(0));
  return (
    JSON.stringify(conditions) !== JSON.stringify(conditionsOf(facts)) ||
    JSON.stringify(status?.addresses ?? []) !== JSON.stringify(want.addresses) ||
    status?.daemonEndpoints?.kubeletEndpoint.Port !== facts.port ||
    !sameResources(status?.capacity, facts.capacity.resources) ||
    !sameResources(status?.allocatable, facts.capacity.resources)
  );
}

/** The oldest heartbeat of `node`'s conditions (epoch ms), NaN when it has none. */
export function heartbeatOf(node: StoredNode): number {
  const times = (node.status?.conditions ?? []).map((c) => Date.parse(c.lastHeartbeatTime ?? ''));
  return times.length === 0 ? Number.NaN : Math.min(...times);
}

function sameResources(
  have: Readonly<Record<string, string>> | null | undefined,
  want: Readonly<Record<string, string>>,
): boolean {
  return Object.entries(want).every(([key, value]) => quantity(have?.[key]) === quantity(value));
}

const SI = { '': 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18 } as const;

/**
 * The value of a whole decimal quantity (what the node writes), NaN for any other: the apiserver stores a
 * quantity in its canonical form (`16000G` comes back `16T`, `0G` as `0`), so strings do not compare.
 */
function quantity(text: string | undefined): number {
  const match = /^(\d+)(k|M|G|T|P|E)?$/.exec(text ?? '');
  return match ? Number(match[1]) * SI[(match[2] ?? '') as keyof typeof SI] : Number.NaN;
}
