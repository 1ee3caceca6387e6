import { ApiCode } from '../../api/codes.ts';
import type { VmStatus } from '../../api/schemas/index.ts';
import { findVmType, type VmType } from '../catalog.ts';
import type { SimContext } from '../context.ts';
import { invalid, noCapacity, notFound, SimError } from '../errors.ts';
import type { Caller } from '../keys.ts';
import type { Market } from '../market.ts';
import { Store } from '../store.ts';
import type { VmRecord, VmSpec } from './vm.ts';

/** A VM in one of these states cannot be terminated (docs/design.md §4). */
const NOT_TERMINABLE: ReadonlySet<VmStatus> = new Set(['INITIALIZING', 'TERMINATING', 'TERMINATED']);

/**
 * VMs and their state machine: create → INITIALIZING → RUNNING; terminate → TERMINATING →
 * TERMINATED, visible for the retention period; spot preemption moves a running VM to FAILED.
 */
export class VmService {
  readonly store = new Store<VmStatus, VmRecord>();
  readonly #ctx: SimContext;

  constructor(ctx: SimContext) {
    this.#ctx = ctx;
  }

  create(caller: Caller, spec: VmSpec): VmRecord {
    const type = vmTypeFor(spec, this.#ctx.market);
    const reservation = this.#ctx.capacity.reserve(
      spec.region,
      type.model.gpuType,
      type.gpuCount,
      spec.isSpot,
    );
    if (reservation === undefined)
      throw noCapacity(`${type.gpuCount} × ${type.model.gpuType} in ${spec.region}`);
    const now = this.#ctx.clock.now();
    const vm: VmRecord = {
      id: this.#ctx.ids.next(),
      org: caller.org,
      orgId: caller.orgId,
      status: 'INITIALIZING',
      type,
      region: spec.region,
      isSpot: spec.isSpot,
      name: spec.name,
      reservation,
      createdAt: now,
      updatedAt: now,
      terminatedAt: null,
      pending: undefined,
    };
    this.store.add(vm);
    this.#ctx.steps.schedule(vm, () => this.#enter(vm, 'RUNNING'));
    return vm;
  }

  get(caller: Caller, id: string): VmRecord {
    const vm = this.store.get(caller.org, id);
    if (vm === undefined) throw notFound(ApiCode.VmNotFound, 'VM', id);
    return vm;
  }

  /** The caller's VMs, oldest first, optionally only those in `status`. */
  list(caller: Caller, status: string | undefined): VmRecord[] {
    const vms: VmRecord[] = [];
    for (const vm of this.store.inOrg(caller.org))
      if (status === undefined || vm.status === status) vms.push(vm);
    return vms;
  }

  rename(caller: Caller, id: string, name: string | undefined): VmRecord {
    const vm = this.get(caller, id);
    if (name !== undefined && name !== vm.name) {
      vm.name = name;
      vm.updatedAt = this.#ctx.clock.now();
    }
    return vm;
  }

  terminate(caller: Caller, id: string): void {
    const vm = this.get(caller, id);
    if (!caller.canTerminate) {
      throw new SimError(ApiCode.NoTerminatePermission, 'this API key has no permission to terminate VMs');
    }
    if (NOT_TERMINABLE.has(vm.status)) {
      throw new SimError(ApiCode.VmStatusInvalid, `VM ${id} is ${vm.status} and cannot be terminated now`);
    }
    this.#enter(vm, 'TERMINATING');
    this.#ctx.steps.schedule(vm, () => this.#enter(vm, 'TERMINATED'));
  }

  /** Spot preemption: a running VM is taken back. False when the VM is not running. */
  preempt(vm: VmRecord): boolean {
    if (vm.status !== 'RUNNING' || !this.store.has(vm)) return false;
    this.#ctx.steps.cancel(vm);
    this.#enter(vm, 'FAILED');
    return true;
  }

  #enter(vm: VmRecord, status: VmStatus): void {
    const now = this.#ctx.clock.now();
    this.store.setStatus(vm, status);
    vm.updatedAt = now;
    if (status === 'FAILED' || status === 'TERMINATED') vm.reservation?.release();
    if (status === 'TERMINATED') {
      vm.terminatedAt = now;
      this.#ctx.scheduler.after(this.#ctx.retentionMs, () => this.store.remove(vm));
    }
  }
}

function vmTypeFor(spec: VmSpec, market: Market): VmType {
  const type = findVmType(spec.vmTypeId);
  if (type === undefined) {
    throw invalid(`body.vmTypeId: ${spec.vmTypeId} is not a VM type; GET /v2/vms/types lists them`);
  }
  if (!type.model.regions.includes(spec.region)) {
    throw invalid(
      `body.region: VM type ${spec.vmTypeId} is offered only in ${type.model.regions.join(', ')}`,
    );
  }
  if (spec.isSpot && !market.spotOffered(type.model)) {
    throw invalid(`body.isSpot: VM type ${spec.vmTypeId} is not offered as spot`);
  }
  return type;
}
