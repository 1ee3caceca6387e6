// The status of a Pod on a virtual node as its kubelet would write it, from the status of the GpuPod that
// runs it: phase, the four conditions, the one container's state, the addresses. Pure: the controller
// writes it when it says something new.
import { isIP } from 'node:net';
import { isDeepStrictEqual } from 'node:util';
import { z } from 'zod';
import { managedStatusSchema } from '../managed/core/status-schema.ts';
import type { NodePodObject } from './pod-object.ts';

/** The parts of a GpuPod's status the Pod's is made from. */
export const gpuPodStatusSchema = managedStatusSchema.extend({
  internalIp: z.string().optional(),
  preemptions: z.number().optional(),
});
export type GpuPodStatusView = z.output<typeof gpuPodStatusSchema>;

/** Why the container waits before its GpuPod says anything: the controller's own reasons. */
export interface Waiting {
  readonly reason: string;
  readonly message: string;
}

export interface PodStatusInput {
  readonly pod: NodePodObject;
  /** The node's InternalIP: the Pod's hostIP. */
  readonly nodeAddress: string;
  /** The status of the Pod's GpuPod; undefined while it has none. */
  readonly gpuPod: GpuPodStatusView | undefined;
  /** Set when the container waits on something the GpuPod cannot tell (a ConfigMap, a name taken). */
  readonly waiting?: Waiting | undefined;
  readonly now: Date;
}

interface PodCondition {
  type: string;
  status: 'True' | 'False';
  reason?: string;
  message?: string;
  lastProbeTime: null;
  lastTransitionTime: string;
}

export interface ContainerStatus {
  name: string;
  image: string;
  imageID: string;
  containerID?: string;
  ready: boolean;
  started: boolean;
  restartCount: number;
  state: Record<string, Record<string, unknown>>;
  /** Always empty: the cloud keeps no state of a container it replaced. A kubelet's empty one is `{}`, as stored. */
  lastState: Record<string, never>;
}

export interface PodStatus {
  phase: 'Pending' | 'Running' | 'Failed';
  reason: string | null;
  message: string | null;
  conditions: PodCondition[];
  containerStatuses: ContainerStatus[];
  hostIP: string;
  hostIPs: Array<{ ip: string }>;
  podIP?: string;
  podIPs?: Array<{ ip: string }>;
  startTime: string;
}

/** The cloud's word for a pod that failed: the container terminated, the Pod failed for good. */
const CLOUD_FAILED = 'Failed';
/** A cloud pod that runs but that the cloud reports unwell: running, not ready. */
const RUNNING_UNWELL = new Set(['Degraded']);
/** Outcomes of a placement attempt that replaced a cloud pod already made: a restart of the container. */
const REPLACED = new Set(['FailedToStart', 'AboveCap']);
/**
 * Ready reasons of a cloud pod on its way up: a kubelet says ContainerCreating, with no message, until the
 * container runs, so the Pod has no news to write while the cloud starts it.
 */
const STARTING = new Set(['Initializing']);
/** exitCode of a container the cloud failed: the cloud tells none. */
const FAILED_EXIT_CODE = 1;

/**
 * The parts of a GpuPod's status that `podStatus` reads, and nothing else: a GpuPod update that leaves them
 * as they were (its finalizer, its bookkeeping, its cost) is no news to its Pod. Unparsable is `{}`.
 */
const mirroredSchema = z
  .object({
    id: z.string().optional(),
    internalIp: z.string().optional(),
    preemptions: z.number().optional(),
    conditions: z
      .array(
        z.object({
          type: z.string(),
          status: z.string(),
          reason: z.string().optional(),
          message: z.string().optional(),
          lastTransitionTime: z.string().optional(),
        }),
      )
      .optional(),
    placement: z.object({ attempts: z.array(z.object({ outcome: z.string() })).optional() }).optional(),
  })
  .catch({});

/** Whether a GpuPod's status went from `before` to `after` in a way its Pod's status may show. */
export function mirroredChanged(before: unknown, after: unknown): boolean {
  const seen = (status: unknown) => JSON.stringify(mirroredSchema.parse(status ?? {}));
  return seen(before) !== seen(after);
}

/** Times as a Pod's status stores them: to the second. */
export function stamp(time: string | Date): string {
  return new Date(time).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

export function podStatus(input: PodStatusInput): PodStatus {
  const { pod, gpuPod, now } = input;
  const [container] = pod.spec.containers;
  const current = pod.status;
  const condition = (type: string) => gpuPod?.conditions?.find((each) => each.type === type);
  const ready = condition('Ready');
  const failed = condition('Failed');
  const synced = condition('Synced');
  const id = gpuPod?.id;
  const terminal = failed?.status === 'True' || (id !== undefined && ready?.reason === CLOUD_FAILED);
  const isReady = !terminal && ready?.status === 'True';
  let state: Record<string, Record<string, unknown>>;
  if (terminal) {
    const ending = failed?.status === 'True' ? failed : ready;
    state = {
      terminated: said({
        exitCode: FAILED_EXIT_CODE,
        reason: ending?.reason ?? CLOUD_FAILED,
        message: ending?.message,
        finishedAt: stamp(ending?.lastTransitionTime ?? now),
      }),
    };
  } else if (isReady || (id !== undefined && RUNNING_UNWELL.has(ready?.reason ?? ''))) {
    state = { running: { startedAt: stamp(ready?.lastTransitionTime ?? now) } };
  } else {
    const why = input.waiting ?? (synced?.status === 'False' ? synced : ready);
    state =
      why === undefined || (why === ready && STARTING.has(why.reason ?? ''))
        ? { waiting: { reason: 'ContainerCreating' } }
        : { waiting: said({ reason: why.reason, message: why.message }) };
  }
  const phase = terminal
    ? 'Failed'
    : isReady || 'running' in state || current?.phase === 'Running'
      ? 'Running'
      : 'Pending';
  const previousRestarts = current?.containerStatuses?.[0]?.restartCount ?? 0;
  const restarts =
    (gpuPod?.preemptions ?? 0) +
    (gpuPod?.placement?.attempts ?? []).filter((attempt) => REPLACED.has(attempt.outcome)).length;
  // As a kubelet's: no container id nor address while the first container is being made.
  const made = id !== undefined && !(phase === 'Pending' && 'waiting' in state);
  const podIp = made && gpuPod?.internalIp && isIP(gpuPod.internalIp) ? gpuPod.internalIp : undefined;
  const terminated = state.terminated;
  return {
    phase,
    reason: typeof terminated?.reason === 'string' ? terminated.reason : null,
    message: typeof terminated?.message === 'string' ? terminated.message : null,
    conditions: conditionsOf(pod, isReady, now),
    containerStatuses: [
      {
        name: container?.name ?? '',
        image: container?.image ?? '',
        imageID: '',
        ...(made ? { containerID: `gpucloud://${id}` } : {}),
        ready: isReady,
        started: 'running' in state,
        // Never down: the record of replacements in the GpuPod's status is bounded.
        restartCount: Math.max(previousRestarts, restarts),
        state,
        lastState: {},
      },
    ],
    hostIP: input.nodeAddress,
    hostIPs: [{ ip: input.nodeAddress }],
    ...(podIp ? { podIP: podIp, podIPs: [{ ip: podIp }] } : {}),
    startTime: current?.startTime ?? stamp(now),
  };
}

/** `fields` without the empty ones: the apiserver stores a container state's empty strings as absent. */
function said(fields: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(fields).filter(([, value]) => value !== undefined && value !== ''),
  );
}

/** PodScheduled and Initialized (no init containers), ContainersReady and Ready as the GpuPod's Ready. */
function conditionsOf(pod: NodePodObject, ready: boolean, now: Date): PodCondition[] {
  const before = pod.status?.conditions ?? [];
  const notReady = {
    reason: 'ContainersNotReady',
    message: `containers with unready status: [${pod.spec.containers[0]?.name ?? ''}]`,
  };
  const wanted = [
    { type: 'PodScheduled', status: 'True' as const },
    { type: 'Initialized', status: 'True' as const },
    {
      type: 'ContainersReady',
      ...(ready ? { status: 'True' as const } : { status: 'False' as const, ...notReady }),
    },
    { type: 'Ready', ...(ready ? { status: 'True' as const } : { status: 'False' as const, ...notReady }) },
  ];
  return wanted.map((condition) => {
    const previous = before.find((each) => each.type === condition.type);
    const kept = previous?.status === condition.status ? previous.lastTransitionTime : undefined;
    return { ...condition, lastProbeTime: null, lastTransitionTime: kept ?? stamp(now) };
  });
}

/**
 * Whether `next` says anything `pod`'s status does not: each field it sets compared as stored (a field a
 * status write never sets, like qosClass, is not looked at), transition times kept from `pod` already.
 */
export function podStatusDiffers(pod: NodePodObject, next: PodStatus): boolean {
  const current: Record<string, unknown> = pod.status ?? {};
  return Object.entries(next).some(([field, value]) => !sameAsStored(current[field], value));
}

function sameAsStored(stored: unknown, wanted: unknown): boolean {
  const normal = (value: unknown) => (value === undefined ? null : JSON.parse(JSON.stringify(value)));
  return isDeepStrictEqual(normal(stored), normal(wanted));
}
