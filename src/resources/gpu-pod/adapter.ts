import type { GpuCloudClient } from '../../api/client.ts';
import type { PodCreateRequest } from '../../api/schemas/pods.ts';
import { type Clock, systemClock } from '../../lib/clock.ts';
import {
  type ActContext,
  act,
  cloudName,
  type ExternalKind,
  type ManagedObject,
  type Plan,
  type Readiness,
} from '../../managed/external-kind.ts';
import {
  fingerprintOf,
  hasMarker,
  ignoreNotFound,
  markerIn,
  readinessFrom,
  unlessNotFound,
} from '../common/cloud.ts';
import type { AdapterOptions } from '../common/registration.ts';
import { cloudFieldsOf, presentStrings, sshEndpoint } from '../common/schema.ts';
import { perHourOf, priceBookOf } from '../pricing/books.ts';
import { gpuPodCloudPrice, gpuPodSpecPrice } from '../pricing/gpu-pod.ts';
import { DETAIL_CALLS, DETAIL_FIELDS, fetchPodDetails, type PodView } from './details.ts';
import { podHeldGpus } from './gpus.ts';
import { busiestGpu, checkIdle, IDLE_CHECK_CALLS, idleRuleOf } from './idle.ts';
import type { GpuPodSpec, GpuPodStatus } from './schema.ts';

type GpuPod = ManagedObject<GpuPodSpec>;

const readiness: Readonly<Record<string, Readiness>> = {
  INITIALIZING: { ready: false, reason: 'Initializing', message: 'the cloud is starting the pod' },
  RUNNING: { ready: true, reason: 'Running', message: 'the pod is running' },
  PAUSING: { ready: false, reason: 'Pausing', message: 'the cloud is pausing the pod' },
  PAUSED: { ready: false, reason: 'Paused', message: 'the pod is paused' },
  TERMINATING: { ready: false, reason: 'Terminating', message: 'the cloud is deleting the pod' },
  TERMINATED: { ready: false, reason: 'Terminated', message: 'the pod is deleted' },
  FAILED: { ready: false, reason: 'Failed', message: 'the cloud reports the pod FAILED', broken: true },
  DEGRADED: { ready: false, reason: 'Degraded', message: 'the cloud reports the pod DEGRADED', broken: true },
};

/** The cloud is moving the pod on its own: nothing to do but wait for the next state. */
const TRANSITIONAL = new Set(['INITIALIZING', 'PAUSING', 'TERMINATING']);

export function gpuPodAdapter(
  client: GpuCloudClient,
  options: Pick<AdapterOptions, 'callbackUrl'> & { clock?: Clock } = {},
): ExternalKind<GpuPodSpec, PodView, GpuPodStatus> {
  const clock = options.clock ?? systemClock;
  return {
    kind: 'GpuPod',
    list: () => client.pods.list(),
    get: (id) => unlessNotFound(client.pods.get(id)),
    idOf: (pod) => pod.id,
    createdAtOf: (pod) => pod.createdAt,
    fingerprint: (pod) => fingerprintOf([pod.status, pod.name, pod.internalIp, pod.region]),
    // The list leaves out the ssh command, ports, prices and environment: a get completes it.
    enrich: async (pod) => (await unlessNotFound(client.pods.get(pod.id))) ?? pod,
    isGone: (pod) => pod.status === 'TERMINATED' || pod.status === 'TERMINATING',
    // Only a get shows the environment: the list's view of a pod has no marker to read.
    markerOf: (pod) => markerIn(pod.environmentVars),
    isOwnCreate: async (mr, pod, ctx) => {
      if (pod.name !== cloudName(mr)) return false;
      const full = await unlessNotFound(client.pods.get(pod.id));
      return hasMarker(full?.environmentVars, ctx.ownerMarker);
    },
    create: async (mr, ctx) => client.pods.create(await createRequest(mr, ctx, options.callbackUrl)),
    demand: async ({ spec }) => ({
      // A CPU pod holds no GPU: neither the GPU-type allow-list nor the GPU limits apply to it.
      gpus:
        spec.gpuType === undefined || spec.resourceType === 'CPU'
          ? undefined
          : { types: [spec.gpuType], count: spec.gpuCount ?? 0 },
      live: !spec.paused,
      perHour: async () => perHourOf(await gpuPodSpecPrice(priceBookOf(client), spec)),
      containerRegistryAuthId:
        spec.containerRegistryAuthId === undefined ? undefined : String(spec.containerRegistryAuthId),
    }),
    // A paused pod keeps its volume, not its GPUs.
    heldGpus: podHeldGpus,
    priceOf: async (pod) => perHourOf(await gpuPodCloudPrice(priceBookOf(client), pod)),
    plan: async (mr, pod) => plan(client, mr, pod),
    lateInit: {
      from: (pod) => ({
        name: pod.name,
        isSpot: pod.isSpot,
        paused: pod.status === 'PAUSED' || pod.status === 'PAUSING',
      }),
      cleared: { paused: false },
    },
    drift: (mr, pod) => podDrift(mr, pod),
    pause: {
      paused: (spec) => ({ ...spec, paused: true }),
      idle: {
        rule: idleRuleOf,
        calls: IDLE_CHECK_CALLS,
        applies: (pod) => pod.status === 'RUNNING',
        check: (pod, rule, now) => checkIdle(client, pod, rule, now),
      },
      shedding: {
        allowed: (spec) => spec?.pauseOnBudget === true,
        utilization: busiestGpu,
      },
    },
    // Never deletes unless the spec says so: a deadline pauses by default.
    deadline: (spec) =>
      spec.activeDeadlineSeconds === undefined
        ? undefined
        : { seconds: spec.activeDeadlineSeconds, action: spec.deadlineAction ?? 'Pause' },
    connectionDetails: (status) => ({
      ...presentStrings({ sshCommand: status.sshCommand, internalIp: status.internalIp }),
      ...sshEndpoint(status.sshCommand),
      ...Object.fromEntries(
        (status.exposedPorts ?? [])
          .filter((exposed) => exposed.ingressUrl)
          .map((exposed) => [`url-${exposed.port}`, String(exposed.ingressUrl)]),
      ),
    }),
    spot: {
      requested: (spec) => spec.isSpot === true,
      preempted: (pod) => pod.isSpot && pod.status === 'FAILED',
    },
    delete: (id) => ignoreNotFound(client.pods.delete(id)),
    readiness: (mr, pod) => podReadiness(mr, pod),
    phaseOf: (pod) => pod.status,
    statusOf: (pod): Partial<GpuPodStatus> => ({
      region: pod.region,
      gpuDisplayName: pod.gpuDisplayName,
      sshCommand: pod.sshCmd ?? undefined,
      internalIp: pod.internalIp ?? undefined,
      exposedPorts: pod.expose?.map(
        ({ port, protocol, ingressUrl, healthy, proxyPort, host, serviceName }) => ({
          port,
          protocol,
          ingressUrl,
          healthy,
          proxyPort: proxyPort ?? undefined,
          host,
          serviceName: serviceName ?? undefined,
        }),
      ),
      cloudType: pod.cloudType,
      createdAt: new Date(pod.createdAt).toISOString(),
      prices:
        pod.singleCardPrice === undefined
          ? undefined
          : {
              singleCard: pod.singleCardPrice,
              containerVolume: pod.containerVolumePrice,
              persistentVolume: pod.persistentVolumePrice,
            },
    }),
    details: {
      calls: DETAIL_CALLS,
      fields: DETAIL_FIELDS,
      applies: (pod) => pod.status === 'RUNNING',
      fetch: (pod) => fetchPodDetails(client, pod, clock.now()),
    },
  };
}

async function createRequest(
  mr: GpuPod,
  ctx: ActContext,
  callbackUrl: string | undefined,
): Promise<PodCreateRequest> {
  const {
    paused: _paused,
    recoveryPolicy: _recovery,
    // The operator's own: a pod create request is strict and refuses them.
    activeDeadlineSeconds: _deadline,
    deadlineAction: _deadlineAction,
    idleStop: _idleStop,
    pauseOnBudget: _pauseOnBudget,
    name: _name,
    environmentVars,
    containerRegistryAuthId,
    ...fields
  } = cloudFieldsOf(mr.spec);
  const env = await ctx.resolveEnv(environmentVars);
  return {
    ...fields,
    ...(containerRegistryAuthId === undefined
      ? {}
      : { containerRegistryAuthId: String(containerRegistryAuthId) }),
    name: cloudName(mr),
    environmentVars: [...env, ctx.ownerMarker],
    ...(callbackUrl ? { callbackUrl } : {}),
  };
}

function plan(client: GpuCloudClient, mr: GpuPod, pod: PodView): Plan {
  if (TRANSITIONAL.has(pod.status)) return { kind: 'wait', reason: pod.status };
  // Left out (before late initialisation, or under a policy without it): as the cloud has it.
  if (mr.spec.paused === true && pod.status === 'RUNNING') {
    return act('Pausing', `pausing pod ${pod.id}`, () => client.pods.pause(pod.id));
  }
  if (mr.spec.paused === false && pod.status === 'PAUSED') {
    return act('Resuming', `resuming pod ${pod.id}`, () => client.pods.resume(pod.id));
  }
  return { kind: 'in-sync' };
}

/**
 * The fields the pod object (list or get) reports and no call can change. The cloud fills what the create
 * left out, so a field the spec leaves out is not compared.
 */
function podDrift(mr: GpuPod, pod: PodView): string[] {
  const { spec } = mr;
  const differs: Array<[string, boolean]> = [
    ['name', pod.name !== cloudName(mr)],
    ['image', pod.image !== spec.image],
    ['imageRegistry', spec.imageRegistry !== undefined && pod.imageRegistry !== spec.imageRegistry],
    ['gpuType', pod.gpuType !== spec.gpuType],
    ['gpuCount', pod.gpuCount !== spec.gpuCount],
    ['isSpot', spec.isSpot !== undefined && pod.isSpot !== spec.isSpot],
    [
      'containerVolumeInGb',
      spec.containerVolumeInGb !== undefined && pod.containerVolumeInGb !== spec.containerVolumeInGb,
    ],
    // An empty list, like none, lets the cloud pick any region.
    ['regions', spec.regions !== undefined && spec.regions.length > 0 && !spec.regions.includes(pod.region)],
  ];
  return differs.filter(([, differ]) => differ).map(([field]) => field);
}

function podReadiness(mr: GpuPod, pod: PodView): Readiness {
  // A pod paused on purpose is exactly what the spec asks for: Ready, with reason Paused.
  if (pod.status === 'PAUSED' && mr.spec.paused)
    return { ready: true, reason: 'Paused', message: 'the pod is paused as asked' };
  if (pod.status === 'RUNNING' && mr.spec.paused)
    return { ready: false, reason: 'Pausing', message: 'pausing the pod' };
  if (pod.status === 'INITIALIZING' && mr.spec.paused === false && mr.status?.phase === 'PAUSED') {
    return { ready: false, reason: 'Resuming', message: 'the cloud is resuming the pod' };
  }
  return readinessFrom(pod.status, readiness);
}
