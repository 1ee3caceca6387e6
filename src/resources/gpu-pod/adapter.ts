import type { GpuCloudClient } from '../../api/client.ts';
import type { PodCreateRequest } from '../../api/schemas/pods.ts';
import { type Clock, systemClock } from '../../lib/clock.ts';
import { ReconcileError } from '../../managed/core/errors.ts';
import {
  type ActContext,
  act,
  cloudName,
  type ExternalKind,
  type ManagedObject,
  type Plan,
  type Readiness,
} from '../../managed/core/external-kind.ts';
import type { PlacementStatus } from '../../managed/core/status-schema.ts';
import {
  fingerprintOf,
  hasMarker,
  ignoreNotFound,
  markerIn,
  readinessFrom,
  unlessNotFound,
} from '../common/cloud.ts';
import type { AdapterOptions } from '../common/registration.ts';
import { cloudFieldsOf, DEFAULT_PLACEMENT_ATTEMPTS, presentStrings, sshEndpoint } from '../common/schema.ts';
import { perHourOf, priceBookOf } from '../pricing/books.ts';
import { gpuPodCloudPrice, gpuPodOffers, gpuPodSpecPrice } from '../pricing/gpu-pod.ts';
import { DEFAULT_MAX_AGE_MS } from '../pricing/price-book.ts';
import { DETAIL_CALLS, DETAIL_FIELDS, fetchPodDetails, type PodView, withPrices } from './details.ts';
import { podHeldGpus } from './gpus.ts';
import { busiestGpu, checkIdle, IDLE_CHECK_CALLS, idleRuleOf } from './idle.ts';
import type { GpuPodSpec, GpuPodStatus } from './schema.ts';
import { rotatedSecrets } from './secret-rotation.ts';

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
  const book = priceBookOf(client, clock);
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
    identity: {
      markerOf: (pod) => markerIn(pod.environmentVars),
      isOwnCreate: async (mr, pod, ctx) => {
        if (pod.name !== cloudName(mr)) return false;
        const full = await unlessNotFound(client.pods.get(pod.id));
        return hasMarker(full?.environmentVars, ctx.ownerMarker);
      },
    },
    create: async (mr, ctx) => client.pods.create(await createRequest(mr, ctx, options.callbackUrl)),
    metering: {
      demand: async ({ spec, status }) => {
        const placed = status?.placement;
        return {
          // A CPU pod holds no GPU: neither the GPU-type allow-list nor the GPU limits apply to it. A placed
          // pod answers for every type it accepts and the one it was placed on.
          gpus:
            spec.resourceType === 'CPU'
              ? undefined
              : { types: acceptedTypes(spec, placed?.gpuType), count: spec.gpuCount ?? 0 },
          live: !spec.paused,
          perHour: async () =>
            placed
              ? Number(placed.chargedPerGpuHour ?? placed.pricePerGpuHour) * spec.gpuCount
              : perHourOf(await gpuPodSpecPrice(book, spec)),
          containerRegistryAuthId:
            spec.containerRegistryAuthId === undefined ? undefined : String(spec.containerRegistryAuthId),
        };
      },
      // A paused pod keeps its volume, not its GPUs.
      heldGpus: podHeldGpus,
      priceOf: async (pod) => perHourOf(await gpuPodCloudPrice(book, pod)),
    },
    placement: {
      requested: (spec) => spec.placement !== undefined,
      offers: (spec, allowed) => gpuPodOffers(book, spec, allowed),
      maxAttempts: (spec) => spec.placement?.maxAttempts ?? DEFAULT_PLACEMENT_ATTEMPTS,
      refreshMs: DEFAULT_MAX_AGE_MS,
      charged: (pod) => pod.singleCardPrice,
      maxPricePerGpuHour: (spec) => spec.placement?.maxPricePerGpuHour,
      failedToStart: (pod, phase) =>
        pod.status === 'FAILED' && (phase === undefined || phase === 'INITIALIZING'),
    },
    plan: async (mr, pod) => plan(client, mr, pod),
    lateInit: {
      // A placed pod's spot choice is its placement's: isSpot stays out of its spec.
      from: (pod, spec) => ({
        name: pod.name,
        ...(spec.placement ? {} : { isSpot: pod.isSpot }),
        paused: pod.status === 'PAUSED' || pod.status === 'PAUSING',
      }),
      cleared: { paused: false },
    },
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
    deadline: {
      of: (spec) =>
        spec.activeDeadlineSeconds === undefined
          ? undefined
          : { seconds: spec.activeDeadlineSeconds, action: spec.deadlineAction ?? 'Pause' },
    },
    secrets: {
      rotatedSecrets: (mr, pod, ctx) => rotatedSecrets(client, mr, pod, ctx),
      connectionDetails: (status) => ({
        ...presentStrings({ sshCommand: status.sshCommand, internalIp: status.internalIp }),
        ...sshEndpoint(status.sshCommand),
        ...Object.fromEntries(
          (status.exposedPorts ?? [])
            .filter((exposed) => exposed.ingressUrl)
            .map((exposed) => [`url-${exposed.port}`, String(exposed.ingressUrl)]),
        ),
      }),
    },
    spot: {
      requested: (spec) => spec.isSpot === true || (spec.placement?.spot ?? 'Never') !== 'Never',
      preempted: (pod) => pod.isSpot && pod.status === 'FAILED',
    },
    delete: (id) => ignoreNotFound(client.pods.delete(id)),
    phaseOf: (pod) => pod.status,
    observe: (mr, pod) => ({
      phase: pod.status,
      readiness: podReadiness(mr, pod),
      status: podStatus(pod),
      drift: podDrift(mr, pod),
    }),
    details: {
      calls: DETAIL_CALLS,
      fields: DETAIL_FIELDS,
      applies: (pod) => pod.status === 'RUNNING',
      fetch: (pod, status) => fetchPodDetails(client, withPrices(pod, status), clock.now()),
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
    placement: _placement,
    name: _name,
    environmentVars,
    containerRegistryAuthId,
    gpuType,
    ...fields
  } = cloudFieldsOf(mr.spec);
  const env = await ctx.resolveEnv(environmentVars);
  const placed = mr.status?.placement;
  if (!placed && gpuType === undefined) {
    // Admission allows no such spec; a resource written before its schema was installed could be one.
    throw new ReconcileError('InvalidSpec', 'set gpuType or placement', { terminal: true });
  }
  return {
    ...fields,
    ...(placed ? placedFields(placed, mr.spec) : { gpuType: gpuType as string }),
    ...(containerRegistryAuthId === undefined
      ? {}
      : { containerRegistryAuthId: String(containerRegistryAuthId) }),
    name: cloudName(mr),
    environmentVars: [...env, ctx.ownerMarker],
    ...(callbackUrl ? { callbackUrl } : {}),
  };
}

/** The offers placement accepts, bounded by the account's allow-list as any type the pod names is. */
function acceptedTypes(spec: GpuPodSpec, placedType: string | undefined): string[] {
  const named = spec.gpuType === undefined ? (spec.placement?.gpuTypes ?? []) : [spec.gpuType];
  return placedType === undefined || named.includes(placedType) ? named : [...named, placedType];
}

/** What a placed pod's create request says of where it runs: the chosen offer, nothing else. */
function placedFields(
  placed: PlacementStatus,
  spec: GpuPodSpec,
): Pick<PodCreateRequest, 'gpuType' | 'regions' | 'isSpot' | 'maxPrice'> {
  const cap = spec.placement?.maxPricePerGpuHour;
  return {
    gpuType: placed.gpuType,
    regions: [placed.region],
    isSpot: placed.spot,
    // The cloud takes a spot cap for the whole machine; on demand, the price is the one chosen.
    ...(placed.spot && cap !== undefined ? { maxPrice: cap * spec.gpuCount } : {}),
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
  // A placed pod is compared with its placement, never with the set it was chosen from: that may change.
  const placed = mr.status?.placement;
  const gpuType = spec.gpuType ?? placed?.gpuType;
  const isSpot = spec.isSpot ?? placed?.spot;
  const differs: Array<[string, boolean]> = [
    ['name', pod.name !== cloudName(mr)],
    ['image', pod.image !== spec.image],
    ['imageRegistry', spec.imageRegistry !== undefined && pod.imageRegistry !== spec.imageRegistry],
    ['gpuType', gpuType !== undefined && pod.gpuType !== gpuType],
    ['gpuCount', pod.gpuCount !== spec.gpuCount],
    ['isSpot', isSpot !== undefined && pod.isSpot !== isSpot],
    [
      'containerVolumeInGb',
      spec.containerVolumeInGb !== undefined && pod.containerVolumeInGb !== spec.containerVolumeInGb,
    ],
    // An empty list, like none, lets the cloud pick any region.
    ['regions', spec.regions !== undefined && spec.regions.length > 0 && !spec.regions.includes(pod.region)],
  ];
  return differs.filter(([, differ]) => differ).map(([field]) => field);
}

/** The pod's own status fields. */
function podStatus(pod: PodView): Partial<GpuPodStatus> {
  return {
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
    gpuType: pod.gpuType,
    createdAt: new Date(pod.createdAt).toISOString(),
    prices:
      pod.singleCardPrice === undefined
        ? undefined
        : {
            singleCard: pod.singleCardPrice,
            containerVolume: pod.containerVolumePrice,
            persistentVolume: pod.persistentVolumePrice,
          },
  };
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
