import { isDeepStrictEqual } from 'node:util';
import type { GpuCloudClient } from '../../api/client.ts';
import {
  type Endpoint,
  type EndpointUpdateRequest,
  SERVICE_MODES,
  type ServiceMode,
} from '../../api/schemas/serverless.ts';
import type { Clock } from '../../lib/clock.ts';
import {
  type ActContext,
  act,
  cloudName,
  type ExternalKind,
  type ManagedObject,
  type Plan,
  type Readiness,
} from '../../managed/core/external-kind.ts';
import { hasMarker, ignoreNotFound, markerIn, readinessFrom } from '../common/cloud.ts';
import type { AdapterContext } from '../common/registration.ts';
import { cloudFieldsOf, presentStrings } from '../common/schema.ts';
import { perHourOf, priceBookOf } from '../pricing/books.ts';
import { serverlessEndpointCloudPrice, serverlessEndpointSpecPrice } from '../pricing/serverless-endpoint.ts';
import { type Decision, QueueAutoscaler } from './autoscaler.ts';
import { endpointHeldGpus, gpusPerWorker } from './gpus.ts';
import type { ServerlessEndpointSpec, ServerlessEndpointStatus } from './schema.ts';

type ServerlessEndpoint = ManagedObject<ServerlessEndpointSpec>;

const readiness: Readonly<Record<string, Readiness>> = {
  INITIALIZING: { ready: false, reason: 'Initializing', message: 'the cloud is starting the endpoint' },
  RUNNING: { ready: true, reason: 'Running', message: 'the endpoint is running' },
  STOPPING: { ready: false, reason: 'Stopping', message: 'the cloud is stopping the endpoint' },
  STOPPED: { ready: false, reason: 'Stopped', message: 'the endpoint is stopped' },
  FAILED: { ready: false, reason: 'Failed', message: 'the cloud reports the endpoint FAILED', broken: true },
};

const TRANSITIONAL = new Set(['INITIALIZING', 'STOPPING']);

export function serverlessEndpointAdapter(
  client: GpuCloudClient,
  { queueIntervalMs, clock }: AdapterContext,
): ExternalKind<ServerlessEndpointSpec, Endpoint, ServerlessEndpointStatus> {
  // The get-by-id answer is a reduced object; the list carries everything, in one call for all.
  const get = async (id: string) => (await client.serverless.list()).find((endpoint) => endpoint.id === id);
  const autoscaling = new Autoscaling(client, queueIntervalMs, clock);
  return {
    kind: 'ServerlessEndpoint',
    list: () => client.serverless.list(),
    get,
    idOf: (endpoint) => endpoint.id,
    // The endpoint object has no creation time; the owner marker alone identifies an interrupted create.
    createdAtOf: () => Number.POSITIVE_INFINITY,
    // Cost and prices move every second while workers run: they are refreshed as details, not watched.
    fingerprint: (endpoint) => {
      const { cost: _cost, perSecondPrice: _s, perHourPrice: _h, ...watched } = endpoint;
      return JSON.stringify(watched);
    },
    isGone: () => false,
    metering: {
      // An autoscaled endpoint is held to the account's limits at its most.
      demand: async ({ spec }) => ({
        gpus: {
          types: spec.resources.map((resource) => resource.gpuType),
          count: (spec.workers ?? spec.autoscaling?.maxWorkers ?? 1) * gpusPerWorker(spec.resources),
        },
        live: !spec.stopped,
        perHour: async () => perHourOf(await serverlessEndpointSpecPrice(priceBookOf(client), spec)),
        credentialId: spec.credentialId === undefined ? undefined : String(spec.credentialId),
      }),
      heldGpus: endpointHeldGpus,
      // Its own perHourPrice: what its running workers cost now.
      priceOf: async (endpoint) => perHourOf(serverlessEndpointCloudPrice(endpoint)),
    },
    identity: {
      markerOf: (endpoint) => markerIn(endpoint.environmentVars),
      isOwnCreate: async (_mr, endpoint, ctx) => hasMarker(endpoint.environmentVars, ctx.ownerMarker),
    },
    create: async (mr, ctx) => {
      const desired = await desiredFields(mr, ctx);
      // A new endpoint starts with one worker unless the spec says otherwise, whatever the cloud's default.
      const workers = mr.spec.workers ?? mr.spec.autoscaling?.minWorkers ?? 1;
      return client.serverless.create({ ...desired, name: cloudName(mr), workers });
    },
    plan: async (mr, endpoint, ctx) =>
      (await plan(client, mr, endpoint, ctx)) ?? autoscaling.plan(mr, endpoint),
    revisit: { afterMs: (mr) => (mr.spec.autoscaling ? queueIntervalMs : undefined) },
    secrets: {
      connectionDetails: (status) => presentStrings({ endpointId: status.id, domain: status.domain }),
    },
    lateInit: {
      from: (endpoint, spec) => ({
        name: endpoint.name,
        imageRegistry: endpoint.imageRegistry,
        minSingleCardVramInGb: endpoint.minSingleCardVramInGb,
        minSingleCardVcpu: endpoint.minSingleCardVcpu,
        minSingleCardRamInGb: endpoint.minSingleCardRamInGb,
        // The autoscaler owns the count; the schema refuses both.
        workers: spec.autoscaling ? undefined : endpoint.totalWorkers,
        credentialId: endpoint.credentialId === null ? undefined : Number(endpoint.credentialId),
        containerVolumeInGb: endpoint.containerVolumeInGb,
        initializationCommand: endpoint.initializationCommand,
        expose: endpoint.expose ?? undefined,
        serviceMode: isServiceMode(endpoint.serviceMode) ? endpoint.serviceMode : undefined,
        webhook: endpoint.webhook ?? undefined,
        stopped: endpoint.status === 'STOPPED' || endpoint.status === 'STOPPING',
      }),
      // What a PATCH clears them with; the fields nothing clears are refused at admission instead.
      cleared: {
        imageRegistry: '',
        minSingleCardVramInGb: 0,
        minSingleCardVcpu: 0,
        minSingleCardRamInGb: 0,
        initializationCommand: '',
        stopped: false,
      },
    },
    delete: (id) => {
      autoscaling.forget(id);
      return ignoreNotFound(client.serverless.delete(id));
    },
    phaseOf: (endpoint) => endpoint.status,
    observe: (mr, endpoint) => ({
      phase: endpoint.status,
      readiness: endpointReadiness(mr, endpoint),
      // The autoscaler's last decision is its plan's, taken in this turn before the report observes.
      status: {
        name: endpoint.name,
        domain: endpoint.domain ?? undefined,
        totalWorkers: endpoint.totalWorkers,
        runningWorkers: endpoint.runningWorkers,
        replicas: endpoint.totalWorkers,
        // No pod carries it: it only has to parse and name the endpoint, for an HPA on External metrics.
        selector: `gpucloud.io/endpoint-id=${endpoint.id}`,
        autoscaling: mr.spec.autoscaling ? autoscaling.last(endpoint.id) : undefined,
      },
      // The cloud can change every field in place: nothing drifts.
      drift: [],
    }),
    details: {
      calls: 1,
      fields: ['cost', 'perHourPrice', 'perSecondPrice', 'tasks'],
      applies: () => true,
      fetch: async (endpoint) => ({
        cost: endpoint.cost,
        perHourPrice: endpoint.perHourPrice,
        perSecondPrice: endpoint.perSecondPrice,
        tasks: endpoint.serviceMode === 'QUEUE' ? await taskCounts(client, endpoint.id) : undefined,
      }),
    },
  };
}

/** The update-request fields the spec sets, with Secret-sourced env resolved and the owner marker added. */
async function desiredFields(mr: ServerlessEndpoint, ctx: ActContext) {
  const {
    stopped: _s,
    workers: _w,
    autoscaling: _a,
    name: _n,
    envVars,
    credentialId,
    ...fields
  } = cloudFieldsOf(mr.spec);
  const env = await ctx.resolveEnv(envVars);
  return {
    ...fields,
    ...optional('credentialId', credentialId === undefined ? undefined : String(credentialId)),
    envVars: [...env, ctx.ownerMarker],
  };
}

/** The step toward the spec, or undefined when the spec is met and only autoscaling may have work. */
async function plan(
  client: GpuCloudClient,
  mr: ServerlessEndpoint,
  endpoint: Endpoint,
  ctx: ActContext,
): Promise<Plan | undefined> {
  if (TRANSITIONAL.has(endpoint.status)) return { kind: 'wait', reason: endpoint.status };
  const changes = await updateFor(mr, endpoint, ctx);
  if (Object.keys(changes).length > 0) {
    const fields = Object.keys(changes).join(', ');
    return act('Updating', `updating endpoint ${endpoint.id}: ${fields}`, () =>
      client.serverless.update(endpoint.id, changes),
    );
  }
  const { workers, stopped } = mr.spec;
  if (workers !== undefined && workers !== endpoint.totalWorkers) {
    return act(
      'Scaling',
      `scaling endpoint ${endpoint.id} from ${endpoint.totalWorkers} to ${workers} workers`,
      () => client.serverless.scaleWorkers(endpoint.id, workers),
    );
  }
  // Left out (before late initialisation, or under a policy without it): as the cloud has it.
  if (stopped === true && endpoint.status === 'RUNNING') {
    return act('Stopping', `stopping endpoint ${endpoint.id}`, () => client.serverless.stop(endpoint.id));
  }
  if (stopped === false && endpoint.status === 'STOPPED') {
    return act('Starting', `starting endpoint ${endpoint.id}`, () => client.serverless.start(endpoint.id));
  }
  return undefined;
}

/**
 * The queue autoscaler on the cloud: task counts read at most once per interval per endpoint (the
 * freshness bound and the call budget in one), decisions kept for the status, by cloud id.
 */
class Autoscaling {
  readonly #client: GpuCloudClient;
  readonly #intervalMs: number;
  readonly #clock: Clock;
  readonly #scaler: QueueAutoscaler;
  readonly #queues = new Map<string, { at: number; queue: number }>();
  readonly #decisions = new Map<string, Decision>();

  constructor(client: GpuCloudClient, intervalMs: number, clock: Clock) {
    this.#client = client;
    this.#intervalMs = intervalMs;
    this.#clock = clock;
    this.#scaler = new QueueAutoscaler(clock);
  }

  async plan(mr: ServerlessEndpoint, endpoint: Endpoint): Promise<Plan> {
    const spec = mr.spec.autoscaling;
    const { id, totalWorkers } = endpoint;
    // A stopped endpoint has no workers to scale; scaling resumes once it runs.
    if (!spec || mr.spec.stopped === true || endpoint.status !== 'RUNNING') {
      if (!spec) this.forget(id);
      return { kind: 'in-sync' };
    }
    const decision = this.#scaler.decide(id, spec, totalWorkers, await this.#queue(id));
    this.#decisions.set(id, decision);
    if (decision.desiredWorkers === totalWorkers) return { kind: 'in-sync' };
    return act(
      'Autoscaling',
      `scaling endpoint ${id} from ${totalWorkers} to ${decision.desiredWorkers} workers (${decision.reason}: ${decision.queue} tasks in flight)`,
      () => this.#client.serverless.scaleWorkers(id, decision.desiredWorkers),
    );
  }

  last(id: string): Decision | undefined {
    return this.#decisions.get(id);
  }

  forget(id: string): void {
    this.#scaler.forget(id);
    this.#queues.delete(id);
    this.#decisions.delete(id);
  }

  /** Tasks in flight, at most one interval old. */
  async #queue(id: string): Promise<number> {
    const known = this.#queues.get(id);
    if (known && this.#clock.now() - known.at < this.#intervalMs) return known.queue;
    const counts = await taskCounts(this.#client, id);
    const queue = counts.processing + counts.delivered;
    this.#queues.set(id, { at: this.#clock.now(), queue });
    return queue;
  }
}

/** The fields whose cloud value differs from the spec; fields the spec leaves out are the cloud's to pick. */
async function updateFor(
  mr: ServerlessEndpoint,
  endpoint: Endpoint,
  ctx: ActContext,
): Promise<EndpointUpdateRequest> {
  const desired: Partial<Awaited<ReturnType<typeof desiredFields>>> & { name: string } = {
    ...(await desiredFields(mr, ctx)),
    name: cloudName(mr),
  };
  // An adopted endpoint's environment is its own until the spec names one: never copied (it may hold
  // secrets), never replaced by an empty one. One the operator made carries its marker: its env is ours.
  if (mr.spec.envVars === undefined && !hasMarker(endpoint.environmentVars, ctx.ownerMarker)) {
    delete desired.envVars;
  }
  const current: Record<Exclude<keyof typeof desired, 'managementPolicies'>, unknown> = {
    ...endpoint,
    credentialId: endpoint.credentialId ?? undefined,
    expose: endpoint.expose ?? undefined,
    webhook: endpoint.webhook ?? undefined,
    resources: endpoint.resources.map(({ region, gpuType, gpuCount }) => ({ region, gpuType, gpuCount })),
    envVars: endpoint.environmentVars,
  };
  const changes: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(desired)) {
    if (value !== undefined && !sameValue(field, value, current[field as keyof typeof desired]))
      changes[field] = value;
  }
  return changes as EndpointUpdateRequest;
}

/** Lists whose order carries no meaning (env, resources) compare as sets. */
function sameValue(field: string, desired: unknown, current: unknown): boolean {
  if ((field === 'envVars' || field === 'resources') && Array.isArray(desired) && Array.isArray(current)) {
    return isDeepStrictEqual(sortedJson(desired), sortedJson(current));
  }
  return isDeepStrictEqual(desired, current);
}

function sortedJson(items: readonly unknown[]): string[] {
  return items.map((item) => JSON.stringify(item)).sort();
}

async function taskCounts(client: GpuCloudClient, id: string) {
  const counts = await client.serverless.tasks.count(id);
  return {
    processing: counts.processing ?? 0,
    delivered: counts.delivered ?? 0,
    success: counts.success ?? 0,
    failed: counts.failed ?? 0,
  };
}

function endpointReadiness(mr: ServerlessEndpoint, endpoint: Endpoint): Readiness {
  if (endpoint.status === 'STOPPED' && mr.spec.stopped === true)
    return { ready: true, reason: 'Stopped', message: 'the endpoint is stopped as asked' };
  if (endpoint.status === 'RUNNING' && mr.spec.stopped === true)
    return { ready: false, reason: 'Stopping', message: 'stopping the endpoint' };
  return readinessFrom(endpoint.status, readiness);
}

function isServiceMode(mode: string): mode is ServiceMode {
  return (SERVICE_MODES as readonly string[]).includes(mode);
}

function optional<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}
