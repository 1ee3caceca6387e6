import { ApiCode } from '../../api/codes.ts';
import type { PodListQuery, PodLogs, PodLogsQuery, PodStatus } from '../../api/schemas/index.ts';
import { podCallback } from '../../api/schemas/pods.ts';
import { CPU_MODEL } from '../catalog.ts';
import type { SimContext } from '../context.ts';
import { notFound, SimError } from '../errors.ts';
import type { Caller } from '../keys.ts';
import { Store } from '../store.ts';
import { PodLog } from './log.ts';
import { placePod } from './placement.ts';
import type { DesiredState, PodRecord, PodSpec } from './pod.ts';

/** Statuses the service tells a pod's callbackUrl about. */
const NOTIFIED: ReadonlySet<PodStatus> = new Set(['RUNNING', 'TERMINATED', 'FAILED', 'DEGRADED']);
/** Statuses in which a pod holds no GPUs. */
const RELEASED: ReadonlySet<PodStatus> = new Set(['PAUSED', 'TERMINATED', 'FAILED']);

/**
 * Pods and their state machine (docs/design.md §4): create → INITIALIZING → RUNNING; pause (RUNNING
 * only) → PAUSING → PAUSED; resume (PAUSED only) → INITIALIZING → RUNNING; delete → TERMINATING →
 * TERMINATED, visible for the retention period; faults move a running pod to FAILED or DEGRADED.
 */
export class PodService {
  readonly store = new Store<PodStatus, PodRecord>();
  readonly #ctx: SimContext;

  constructor(ctx: SimContext) {
    this.#ctx = ctx;
  }

  create(caller: Caller, spec: PodSpec): PodRecord {
    const placement = placePod(spec, this.#ctx.capacity, this.#ctx.market);
    const id = this.#ctx.ids.next();
    const now = this.#ctx.clock.now();
    const pod: PodRecord = {
      id,
      org: caller.org,
      orgId: caller.orgId,
      applicantId: caller.applicantId,
      status: 'INITIALIZING',
      spec,
      ...placement,
      shmInGb: spec.shmInGb ?? Math.max(1, Math.floor((placement.model.ramPerGpuInGb * spec.gpuCount) / 8)),
      internalIp: internalIp(Number(id)),
      environmentVars: [
        ...spec.environmentVars.filter((env) => env.key !== 'POD_ID'),
        { key: 'POD_ID', value: id },
      ],
      log: new PodLog(),
      createdAt: now,
      updatedAt: now,
      desiredState: 'RUNNING',
      runningMillis: 0,
      runningSince: undefined,
      runs: [],
      gpuUtilization: [],
      pending: undefined,
    };
    this.store.add(pod);
    this.#system(pod, `pod created on ${placement.model.displayName} × ${spec.gpuCount} in ${pod.region}`);
    this.#ctx.steps.schedule(pod, () => {
      if (!this.#ctx.capacity.startsFail(pod.region, pod.model.gpuType)) return this.#enter(pod, 'RUNNING');
      this.#system(pod, 'no machine free to start the pod on', 'ERROR');
      this.#enter(pod, 'FAILED');
    });
    return pod;
  }

  get(caller: Caller, id: string): PodRecord {
    const pod = this.store.get(caller.org, id);
    if (pod === undefined) throw notFound(ApiCode.PodNotFound, 'pod', id);
    return pod;
  }

  list(caller: Caller, query: PodListQuery): PodRecord[] {
    const regions = nonEmpty(query.regionList);
    const statuses = nonEmpty(query.statusList);
    const pods: PodRecord[] = [];
    for (const pod of this.store.inOrg(caller.org)) {
      if (regions?.has(pod.region) === false || statuses?.has(pod.status) === false) continue;
      pods.push(pod);
    }
    return pods;
  }

  pause(caller: Caller, id: string): void {
    const pod = this.get(caller, id);
    requireStatus(pod, 'RUNNING', 'paused');
    this.#command(pod, 'PAUSED', 'PAUSING');
    this.#ctx.steps.schedule(pod, () => this.#enter(pod, 'PAUSED'));
  }

  resume(caller: Caller, id: string): void {
    const pod = this.get(caller, id);
    requireStatus(pod, 'PAUSED', 'resumed');
    if (pod.model !== CPU_MODEL) {
      pod.reservation = this.#ctx.capacity.reserve(
        pod.region,
        pod.model.gpuType,
        pod.spec.gpuCount,
        pod.spec.isSpot,
      );
      if (pod.reservation === undefined) {
        throw new SimError(
          ApiCode.NoCapacity,
          `no ${pod.model.gpuType} free in ${pod.region} to resume pod ${id}; retry later`,
        );
      }
    }
    this.#command(pod, 'RUNNING', 'INITIALIZING');
    this.#ctx.steps.schedule(pod, () => this.#enter(pod, 'RUNNING'));
  }

  /** Deleting a pod that is already terminating or terminated succeeds and changes nothing. */
  delete(caller: Caller, id: string): void {
    const pod = this.get(caller, id);
    if (pod.status === 'TERMINATING' || pod.status === 'TERMINATED') return;
    this.#command(pod, 'TERMINATED', 'TERMINATING');
    this.#ctx.steps.schedule(pod, () => this.#enter(pod, 'TERMINATED'));
  }

  logs(caller: Caller, id: string, query: PodLogsQuery): PodLogs {
    return this.get(caller, id).log.read(query);
  }

  /**
   * The simulator's control behind idle-detection tests: from now on the pod's GPU utilisation series
   * report `percent` for GPU `gpuIndex`, or every GPU. Throws naming what is wrong.
   */
  setGpuUtilization(id: string, percent: number, gpuIndex?: number): void {
    if (!Number.isFinite(percent) || percent < 0 || percent > 100)
      throw new RangeError(`percent must be between 0 and 100, got ${percent}`);
    const pod = this.store.find(id);
    if (pod === undefined) throw new Error(`pod ${id} does not exist`);
    if (pod.model === CPU_MODEL) throw new Error(`pod ${id} is a CPU pod: it has no GPU series`);
    if (
      gpuIndex !== undefined &&
      !(Number.isInteger(gpuIndex) && gpuIndex >= 0 && gpuIndex < pod.spec.gpuCount)
    )
      throw new RangeError(`gpuIndex must be an integer from 0 to ${pod.spec.gpuCount - 1}, got ${gpuIndex}`);
    pod.gpuUtilization.push({ from: this.#ctx.clock.now(), percent, gpuIndex });
  }

  /**
   * A fault: a RUNNING (or DEGRADED, to fail) pod breaks. Returns false when the pod is in no state
   * to break. `reason` goes to the pod's system log.
   */
  break(pod: PodRecord, status: 'FAILED' | 'DEGRADED', reason: string): boolean {
    const breakable = pod.status === 'RUNNING' || (status === 'FAILED' && pod.status === 'DEGRADED');
    if (!breakable || !this.store.has(pod)) return false;
    this.#ctx.steps.cancel(pod);
    this.#system(pod, reason, 'ERROR');
    this.#enter(pod, status);
    return true;
  }

  #command(pod: PodRecord, desired: DesiredState, status: PodStatus): void {
    pod.desiredState = desired;
    this.#enter(pod, status);
  }

  #enter(pod: PodRecord, status: PodStatus): void {
    const now = this.#ctx.clock.now();
    if (pod.runningSince !== undefined) {
      pod.runningMillis += now - pod.runningSince;
      pod.runs.push({ from: pod.runningSince, to: now });
      pod.runningSince = undefined;
    }
    if (status === 'RUNNING') pod.runningSince = now;
    if (RELEASED.has(status)) pod.reservation?.release();
    this.store.setStatus(pod, status);
    pod.updatedAt = now;
    this.#system(pod, `status changed to ${status}`);
    if (status === 'RUNNING') this.#containerStarted(pod);
    if (status === 'TERMINATED') this.#expireLater(pod);
    if (NOTIFIED.has(status) && pod.spec.callbackUrl !== null) {
      this.#ctx.courier.send(
        pod.spec.callbackUrl,
        podCallback.encode({ podId: pod.id, status, timestamp: now }),
        {},
      );
    }
  }

  #expireLater(pod: PodRecord): void {
    this.#ctx.scheduler.after(this.#ctx.retentionMs, () => this.store.remove(pod));
  }

  #containerStarted(pod: PodRecord): void {
    const now = this.#ctx.clock.now();
    const { spec } = pod;
    const lines = [
      `pulling image ${spec.imageRegistry ? `${spec.imageRegistry}/` : ''}${spec.image}`,
      'image pulled',
      ...(spec.initializationCommand
        ? [`running initialization command: ${spec.initializationCommand}`]
        : []),
      ...spec.expose.map((port) => `listening on ${port.protocol.toLowerCase()} port ${port.port}`),
      'container started',
    ];
    for (const line of lines) pod.log.append(now, 'CONTAINER', 'INFO', line);
  }

  #system(pod: PodRecord, content: string, level: 'INFO' | 'ERROR' = 'INFO'): void {
    pod.log.append(this.#ctx.clock.now(), 'SYSTEM', level, content);
  }
}

function requireStatus(pod: PodRecord, status: PodStatus, action: string): void {
  if (pod.status !== status) {
    throw new SimError(
      ApiCode.ResourceStatusInvalid,
      `pod ${pod.id} is ${pod.status}; only a ${status} pod can be ${action}`,
    );
  }
}

function nonEmpty(values: readonly string[] | undefined): ReadonlySet<string> | undefined {
  return values === undefined || values.length === 0 ? undefined : new Set(values);
}

/** A private address that is stable for a pod id. */
function internalIp(id: number): string {
  return `10.${(id >> 16) & 255}.${(id >> 8) & 255}.${id & 255}`;
}
