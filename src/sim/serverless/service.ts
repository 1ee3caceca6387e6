import { ApiCode } from '../../api/codes.ts';
import type {
  EndpointCreateRequest,
  EndpointStatus,
  EndpointUpdateRequest,
} from '../../api/schemas/index.ts';
import type { Reservation } from '../capacity.ts';
import { DEFAULT_CONTAINER_VOLUME_GB, findModel, gpuCounts } from '../catalog.ts';
import type { SimContext } from '../context.ts';
import { invalid, noCapacity, notFound, SimError } from '../errors.ts';
import type { Caller } from '../keys.ts';
import { Store } from '../store.ts';
import type { EndpointConfig, EndpointRecord, WorkerResource } from './endpoint.ts';
import { newTaskBoard, TaskQueue } from './tasks.ts';

const DEFAULT_WORKERS = 1;
const DOMAIN = 'serverless.gpucloud.sim';
const HOUR_MS = 3_600_000;

/**
 * Serverless endpoints (docs/design.md §4): create → INITIALIZING → RUNNING; stop → STOPPING → STOPPED
 * (no workers); start → INITIALIZING → RUNNING. Each worker holds GPUs of one of the endpoint's
 * resources; creating, starting or scaling up without room is refused with 12002. After delete the
 * endpoint is gone at once (24001).
 */
export class EndpointService {
  readonly store = new Store<EndpointStatus, EndpointRecord>();
  readonly tasks: TaskQueue;
  readonly #ctx: SimContext;

  constructor(ctx: SimContext) {
    this.#ctx = ctx;
    this.tasks = new TaskQueue(ctx);
  }

  create(caller: Caller, request: EndpointCreateRequest): EndpointRecord {
    const config = configFrom(request);
    const totalWorkers = request.workers ?? DEFAULT_WORKERS;
    const workers = this.#reserveWorkers(config.resources, totalWorkers);
    const now = this.#ctx.clock.now();
    const endpoint: EndpointRecord = {
      id: this.#ctx.ids.next(),
      org: caller.org,
      orgId: caller.orgId,
      creator: caller.applicantId,
      status: 'INITIALIZING',
      config,
      totalWorkers,
      workers,
      domain: null,
      createdAt: now,
      updatedAt: now,
      costAccrued: 0,
      costSince: undefined,
      board: newTaskBoard(),
      pending: undefined,
    };
    this.store.add(endpoint);
    this.#ctx.steps.schedule(endpoint, () => this.#enter(endpoint, 'RUNNING'));
    return endpoint;
  }

  get(caller: Caller, id: string, missing: ApiCode = ApiCode.ServerlessNotFound): EndpointRecord {
    const endpoint = this.store.get(caller.org, id);
    if (endpoint === undefined) throw notFound(missing, 'serverless endpoint', id);
    return endpoint;
  }

  list(caller: Caller, statuses: readonly string[] | undefined): EndpointRecord[] {
    const wanted = statuses?.length ? new Set(statuses) : undefined;
    return [...this.store.inOrg(caller.org)].filter((endpoint) => wanted?.has(endpoint.status) !== false);
  }

  update(caller: Caller, id: string, patch: EndpointUpdateRequest): EndpointRecord {
    const endpoint = this.get(caller, id);
    const config = configFrom({ ...requestOf(endpoint.config), ...patch });
    const total = patch.workers ?? endpoint.totalWorkers;
    if (holdsWorkers(endpoint)) this.#placeWorkers(endpoint, config.resources, total);
    endpoint.config = config;
    endpoint.totalWorkers = total;
    endpoint.updatedAt = this.#ctx.clock.now();
    this.tasks.pump(endpoint);
    return endpoint;
  }

  delete(caller: Caller, id: string): void {
    const endpoint = this.get(caller, id);
    this.#ctx.steps.cancel(endpoint);
    this.tasks.drop(endpoint);
    this.#releaseWorkers(endpoint);
    this.store.remove(endpoint);
  }

  start(caller: Caller, id: string): void {
    const endpoint = this.get(caller, id);
    if (endpoint.status !== 'STOPPED' && endpoint.status !== 'FAILED') {
      throw new SimError(
        ApiCode.ResourceStatusInvalid,
        `endpoint ${id} is ${endpoint.status}; only a STOPPED endpoint can be started`,
      );
    }
    endpoint.workers = this.#reserveWorkers(endpoint.config.resources, endpoint.totalWorkers);
    this.#enter(endpoint, 'INITIALIZING');
    this.#ctx.steps.schedule(endpoint, () => this.#enter(endpoint, 'RUNNING'));
  }

  stop(caller: Caller, id: string): void {
    const endpoint = this.get(caller, id);
    if (endpoint.status !== 'RUNNING' && endpoint.status !== 'INITIALIZING') {
      throw new SimError(
        ApiCode.ResourceStatusInvalid,
        `endpoint ${id} is ${endpoint.status}; only a running endpoint can be stopped`,
      );
    }
    this.#enter(endpoint, 'STOPPING');
    this.#ctx.steps.schedule(endpoint, () => this.#enter(endpoint, 'STOPPED'));
  }

  scale(caller: Caller, id: string, count: number): void {
    const endpoint = this.get(caller, id);
    if (holdsWorkers(endpoint)) this.#placeWorkers(endpoint, endpoint.config.resources, count);
    endpoint.totalWorkers = count;
    endpoint.updatedAt = this.#ctx.clock.now();
    this.tasks.pump(endpoint);
  }

  /** USD spent so far: running workers cost their machines' hourly price. */
  cost(endpoint: EndpointRecord): number {
    return endpoint.costAccrued + this.#hourlyRate(endpoint) * this.#sinceCostStart(endpoint);
  }

  /** USD per hour of all the workers asked for, at the first resource's price. */
  hourlyPrice(endpoint: EndpointRecord): number {
    const first = endpoint.config.resources[0] as WorkerResource;
    return this.#ctx.market.hourly(first.model, first.gpuCount, false) * endpoint.totalWorkers;
  }

  /** Puts `count` workers on `resources`, all or none: on failure the endpoint keeps the workers it had. */
  #placeWorkers(endpoint: EndpointRecord, resources: readonly WorkerResource[], count: number): void {
    const previous = endpoint.workers.length;
    this.#releaseWorkers(endpoint);
    try {
      endpoint.workers = this.#reserveWorkers(resources, count);
    } catch (error) {
      endpoint.workers = this.#reserveWorkers(endpoint.config.resources, previous);
      throw error;
    }
  }

  #enter(endpoint: EndpointRecord, status: EndpointStatus): void {
    const now = this.#ctx.clock.now();
    this.#settleCost(endpoint);
    this.store.setStatus(endpoint, status);
    endpoint.costSince = status === 'RUNNING' ? now : undefined;
    endpoint.updatedAt = now;
    if (status === 'RUNNING') {
      endpoint.domain ??= `${endpoint.id}.${DOMAIN}`;
      this.tasks.pump(endpoint);
    }
    if (status === 'STOPPED' || status === 'FAILED') this.#releaseWorkers(endpoint);
  }

  /** Reserves `count` workers on the first resources with room; all or none. */
  #reserveWorkers(resources: readonly WorkerResource[], count: number): Reservation[] {
    const taken: Reservation[] = [];
    for (let i = 0; i < count; i++) {
      const worker = this.#reserveWorker(resources);
      if (worker === undefined) {
        for (const reservation of taken) reservation.release();
        throw noCapacity(`${count} workers on ${describe(resources)}`);
      }
      taken.push(worker);
    }
    return taken;
  }

  #reserveWorker(resources: readonly WorkerResource[]): Reservation | undefined {
    for (const resource of resources) {
      const reservation = this.#ctx.capacity.reserve(
        resource.region,
        resource.model.gpuType,
        resource.gpuCount,
      );
      if (reservation !== undefined) return reservation;
    }
    return undefined;
  }

  #releaseWorkers(endpoint: EndpointRecord): void {
    this.#settleCost(endpoint);
    for (const worker of endpoint.workers) worker.release();
    endpoint.workers = [];
  }

  /** Books the cost of the current period so far, before the workers or the status change. */
  #settleCost(endpoint: EndpointRecord): void {
    endpoint.costAccrued = this.cost(endpoint);
    if (endpoint.costSince !== undefined) endpoint.costSince = this.#ctx.clock.now();
  }

  #sinceCostStart(endpoint: EndpointRecord): number {
    return endpoint.costSince === undefined ? 0 : (this.#ctx.clock.now() - endpoint.costSince) / HOUR_MS;
  }

  #hourlyRate(endpoint: EndpointRecord): number {
    let rate = 0;
    for (const worker of endpoint.workers) {
      const model = findModel(worker.gpuType);
      if (model !== undefined) rate += this.#ctx.market.hourly(model, worker.gpus, false);
    }
    return rate;
  }
}

/** An endpoint holds GPUs for its workers while it is starting or running. */
function holdsWorkers(endpoint: EndpointRecord): boolean {
  return endpoint.status === 'INITIALIZING' || endpoint.status === 'RUNNING';
}

function configFrom(request: EndpointCreateRequest): EndpointConfig {
  return {
    name: request.name,
    imageRegistry: request.imageRegistry ?? '',
    image: request.image,
    resources: request.resources.map(workerResource),
    minSingleCardVramInGb: request.minSingleCardVramInGb ?? 0,
    minSingleCardVcpu: request.minSingleCardVcpu ?? 0,
    minSingleCardRamInGb: request.minSingleCardRamInGb ?? 0,
    credentialId: request.credentialId ?? null,
    containerVolumeInGb: request.containerVolumeInGb ?? DEFAULT_CONTAINER_VOLUME_GB,
    initializationCommand: request.initializationCommand ?? '',
    envVars: request.envVars ?? [],
    expose: request.expose ?? null,
    serviceMode: request.serviceMode ?? 'QUEUE',
    webhook: request.webhook ?? null,
  };
}

/** The config as a create request again, so a partial update is validated like a create. */
function requestOf(config: EndpointConfig): EndpointCreateRequest {
  return {
    name: config.name,
    imageRegistry: config.imageRegistry,
    image: config.image,
    resources: config.resources.map(({ region, model, gpuCount }) => ({
      region,
      gpuType: model.gpuType,
      gpuCount,
    })),
    minSingleCardVramInGb: config.minSingleCardVramInGb,
    minSingleCardVcpu: config.minSingleCardVcpu,
    minSingleCardRamInGb: config.minSingleCardRamInGb,
    ...(config.credentialId === null ? {} : { credentialId: config.credentialId }),
    containerVolumeInGb: config.containerVolumeInGb,
    initializationCommand: config.initializationCommand,
    envVars: config.envVars,
    ...(config.expose === null ? {} : { expose: config.expose }),
    serviceMode: config.serviceMode,
    ...(config.webhook === null ? {} : { webhook: config.webhook }),
  };
}

function workerResource(
  resource: { region: string; gpuType: string; gpuCount: number },
  index: number,
): WorkerResource {
  const model = findModel(resource.gpuType);
  const field = `body.resources.${index}`;
  if (model === undefined)
    throw invalid(`${field}.gpuType: "${resource.gpuType}" is not a GPU type this service offers`);
  if (!model.regions.includes(resource.region)) {
    throw invalid(`${field}.region: ${model.gpuType} is offered only in ${model.regions.join(', ')}`);
  }
  if (!gpuCounts(model).includes(resource.gpuCount)) {
    throw invalid(`${field}.gpuCount: ${model.gpuType} workers take ${gpuCounts(model).join(', ')} GPUs`);
  }
  return { region: resource.region, model, gpuCount: resource.gpuCount };
}

function describe(resources: readonly WorkerResource[]): string {
  return resources
    .map((resource) => `${resource.gpuCount} × ${resource.model.gpuType} in ${resource.region}`)
    .join(' or ');
}
