import type { GpuCloudClient } from '../../api/client.ts';
import type { Vm, VmTypeItem } from '../../api/schemas/vms.ts';
import { type Clock, systemClock } from '../../lib/clock.ts';
import { CREATE_NAME } from '../../managed/core/annotations.ts';
import { ReconcileError } from '../../managed/core/errors.ts';
import {
  act,
  cloudName,
  type ExternalKind,
  type ManagedObject,
  type Readiness,
} from '../../managed/core/external-kind.ts';
import type { PlacementStatus } from '../../managed/core/status-schema.ts';
import { fingerprintOf, ignoreNotFound, readinessFrom, unlessNotFound } from '../common/cloud.ts';
import { DEFAULT_PLACEMENT_ATTEMPTS, presentStrings, sshEndpoint } from '../common/schema.ts';
import { perHourOf, priceBookOf } from '../pricing/books.ts';
import { gpuVmCloudPrice, gpuVmOffers, gpuVmSpecQuote, placedVmType } from '../pricing/gpu-vm.ts';
import { DEFAULT_MAX_AGE_MS, type PriceBook } from '../pricing/price-book.ts';
import { vmHeldGpus } from './gpus.ts';
import type { GpuVmSpec, GpuVmStatus } from './schema.ts';

const readiness: Readonly<Record<string, Readiness>> = {
  INITIALIZING: { ready: false, reason: 'Initializing', message: 'the cloud is starting the VM' },
  RUNNING: { ready: true, reason: 'Running', message: 'the VM is running' },
  STOPPING: { ready: false, reason: 'Stopping', message: 'the cloud is stopping the VM' },
  STOPPED: { ready: false, reason: 'Stopped', message: 'the VM is stopped' },
  TERMINATING: { ready: false, reason: 'Terminating', message: 'the cloud is terminating the VM' },
  TERMINATED: { ready: false, reason: 'Terminated', message: 'the VM is terminated' },
  FAILED: { ready: false, reason: 'Failed', message: 'the cloud reports the VM FAILED', broken: true },
};

export function gpuVmAdapter(
  client: GpuCloudClient,
  { clock = systemClock }: { clock?: Clock } = {},
): ExternalKind<GpuVmSpec, Vm, GpuVmStatus> {
  const types = vmTypeCatalog(client);
  const book = priceBookOf(client, clock);
  return {
    kind: 'GpuVm',
    list: async () => Array.fromAsync(client.vms.listAll()),
    get: (id) => unlessNotFound(client.vms.get(id)),
    idOf: (vm) => vm.id,
    createdAtOf: (vm) => vm.createdAt,
    fingerprint: (vm) => fingerprintOf([vm.status, vm.name, vm.ipAddress, vm.domainName]),
    isGone: (vm) => vm.status === 'TERMINATED' || vm.status === 'TERMINATING',
    // A VM carries no environment to mark, so its name (and creation after the intent, and no other
    // custom resource claiming it, which the reconciler checks) is all that identifies it: the name the
    // create was sent with, which a rename since may have changed in the spec.
    identity: {
      isOwnCreate: async (mr, vm) => vm.name === (mr.metadata.annotations?.[CREATE_NAME] ?? cloudName(mr)),
    },
    create: async (mr) => {
      const { volumeMountPaths } = mr.spec;
      return client.vms.create({
        ...(await machineOf(book, mr.spec, mr.status?.placement)),
        name: cloudName(mr),
        ...(volumeMountPaths ? { volumeMountPaths } : {}),
      });
    },
    metering: {
      demand: async ({ spec, status }) => {
        const placed = status?.placement;
        const count = spec.placement?.gpuCount;
        return {
          // A placed VM answers for every model it accepts and the one it was placed on.
          gpus:
            count === undefined
              ? spec.vmTypeId === undefined
                ? undefined
                : await types.gpusOf(spec.vmTypeId)
              : { types: acceptedTypes(spec.placement?.gpuTypes, placed?.gpuType), count },
          live: true,
          perHour: async () =>
            placed && count !== undefined
              ? Number(placed.pricePerGpuHour) * count
              : perHourOf((await gpuVmSpecQuote(book, spec)).price),
        };
      },
      heldGpus: vmHeldGpus,
      priceOf: async (vm) => perHourOf(await gpuVmCloudPrice(book, vm)),
    },
    placement: {
      requested: (spec) => spec.placement !== undefined,
      offers: async (spec, allowed) =>
        spec.placement
          ? gpuVmOffers(book, spec.placement, allowed)
          : { asOf: 0, offers: [], none: 'no placement' },
      maxAttempts: (spec) => spec.placement?.maxAttempts ?? DEFAULT_PLACEMENT_ATTEMPTS,
      refreshMs: DEFAULT_MAX_AGE_MS,
      // The VM object carries no price: status.pricePerHour is the listing's, on the details schedule.
      charged: () => undefined,
      maxPricePerGpuHour: (spec) => spec.placement?.maxPricePerGpuHour,
      failedToStart: (vm, phase) =>
        vm.status === 'FAILED' && (phase === undefined || phase === 'INITIALIZING'),
    },
    plan: async (mr, vm) => {
      const name = cloudName(mr);
      if (vm.name === name) return { kind: 'in-sync' };
      return act('Renaming', `renaming VM ${vm.id} from ${vm.name} to ${name}`, () =>
        client.vms.update(vm.id, { name }),
      );
    },
    // A placed VM's spot choice is its placement's: isSpot stays out of its spec.
    lateInit: {
      from: (vm, spec) => ({ name: vm.name, ...(spec.placement ? {} : { isSpot: vm.isSpot }) }),
      cleared: {},
    },
    secrets: {
      connectionDetails: (status) => ({
        ...presentStrings({
          ipAddress: status.ipAddress,
          domainName: status.domainName,
          notebookUrl: status.notebookUrl,
          sshCommand: status.sshTemplate,
        }),
        ...sshEndpoint(status.sshTemplate),
      }),
    },
    spot: {
      requested: (spec) => spec.isSpot === true || (spec.placement?.spot ?? 'Never') !== 'Never',
      preempted: (vm) => vm.isSpot && vm.status === 'FAILED',
    },
    // Terminate is refused (11001) while the VM is starting: that error is transient and retried with
    // backoff; a key without terminate permission (11002) is terminal and shown on the resource.
    delete: (id) => ignoreNotFound(client.vms.terminate(id)),
    // A VM cannot pause: its schema requires deadlineAction Delete with a deadline.
    deadline: {
      of: (spec) =>
        spec.activeDeadlineSeconds === undefined
          ? undefined
          : { seconds: spec.activeDeadlineSeconds, action: 'Delete' },
    },
    phaseOf: (vm) => vm.status,
    observe: (mr, vm) => ({
      phase: vm.status,
      readiness: readinessFrom(vm.status, readiness),
      status: vmStatus(vm),
      drift: vmDrift(mr, vm),
    }),
    // The price comes from the types listing (read once, cached), the cost grows by the second: both
    // are refreshed on the details schedule, not on every change.
    details: {
      calls: 1,
      fields: ['pricePerHour', 'currency', 'estimatedCost'],
      applies: (vm) => vm.status !== 'TERMINATED',
      fetch: (vm) => vmPrice(types, vm, clock.now()),
    },
  };
}

/** A placed VM's models: those it accepts, and the one it was placed on. */
function acceptedTypes(listed: readonly string[] | undefined, placedType: string | undefined): string[] {
  const named = [...(listed ?? [])];
  return placedType === undefined || named.includes(placedType) ? named : [...named, placedType];
}

/** What the create request says of the machine: the spec's type and region, or the placement's. */
async function machineOf(
  book: PriceBook,
  spec: GpuVmSpec,
  placed: PlacementStatus | undefined,
): Promise<{ vmTypeId: number; region: string; isSpot: boolean }> {
  if (spec.vmTypeId !== undefined && spec.region !== undefined) {
    return { vmTypeId: spec.vmTypeId, region: spec.region, isSpot: spec.isSpot ?? false };
  }
  const gpuCount = spec.placement?.gpuCount;
  const vmTypeId = placed && gpuCount !== undefined ? await placedVmType(book, placed, gpuCount) : undefined;
  if (!placed || vmTypeId === undefined) {
    // Admission allows no such spec; the listing dropping the placed type since is the other way here.
    throw new ReconcileError(
      'InvalidSpec',
      placed
        ? `the VM types listing has no ${gpuCount} × ${placed.gpuType} type in ${placed.region} any more`
        : 'set vmTypeId and region, or placement',
      { terminal: !placed, retryAfterMs: placed ? DEFAULT_MAX_AGE_MS : undefined },
    );
  }
  return { vmTypeId, region: placed.region, isSpot: placed.spot };
}

interface VmType {
  region: string;
  gpuType: string;
  item: VmTypeItem;
}

/**
 * The VM types listing: read once, and again only for a type it does not know (a type added since), so a
 * guardrail check or a price rarely costs a call.
 */
function vmTypeCatalog(client: GpuCloudClient) {
  let known: VmType[] | undefined;
  const read = async () =>
    (await client.vms.types()).flatMap(({ gpuType, regions }) =>
      regions.flatMap(({ region, types }) => types.map((item) => ({ region, gpuType, item }))),
    );
  const find = async (matches: (type: VmType) => boolean) => {
    known ??= await read();
    const hit = known.find(matches);
    if (hit) return hit;
    known = await read();
    return known.find(matches);
  };
  return {
    async gpusOf(vmTypeId: number): Promise<{ types: string[]; count: number } | undefined> {
      const type = await find(({ item }) => item.vmTypeId === vmTypeId);
      return type && { types: [type.gpuType], count: type.item.gpuCount };
    },
    /** The type a VM was made from: the VM object does not name it, its shape and region do. */
    typeOf(vm: Vm): Promise<VmType | undefined> {
      return find(
        ({ region, gpuType, item }) =>
          region === vm.region &&
          gpuType === vm.gpuType &&
          item.gpuCount === vm.gpuCount &&
          item.cpuCores === vm.cpuCores &&
          item.memoryInGb === vm.memoryInGb,
      );
    },
  };
}

/**
 * The VM's hourly price from its type, and the cost since it was created. The VM API reports no billed
 * running time, so stopped hours count too: an upper bound, as the docs say.
 */
async function vmPrice(
  catalog: ReturnType<typeof vmTypeCatalog>,
  vm: Vm,
  now: number,
): Promise<Record<string, unknown>> {
  const type = await catalog.typeOf(vm);
  if (!type) return {};
  const hourly = vm.isSpot ? type.item.spotPricePerHour : type.item.pricePerHour;
  if (hourly === undefined) return {};
  const until = vm.terminatedAt ?? now;
  const cost = (Math.max(0, until - vm.createdAt) / 3_600_000) * Number(hourly);
  return {
    pricePerHour: hourly,
    currency: type.item.currency,
    estimatedCost: Number.isFinite(cost) ? cost.toFixed(4) : undefined,
  };
}

/**
 * The VM object does not report its type: region and capacity kind are what can be compared (a
 * placed VM's, with its placement: never with the set it was chosen from, which may change).
 */
function vmDrift({ spec, status }: ManagedObject<GpuVmSpec>, vm: Vm): string[] {
  const placed = status?.placement;
  const region = spec.region ?? placed?.region;
  const isSpot = spec.isSpot ?? placed?.spot;
  return [
    ...(region === undefined || vm.region === region ? [] : ['region']),
    ...(isSpot === undefined || vm.isSpot === isSpot ? [] : ['isSpot']),
    ...(placed === undefined || vm.gpuType === placed.gpuType ? [] : ['gpuType']),
  ];
}

/** The VM's own status fields. */
function vmStatus(vm: Vm): Partial<GpuVmStatus> {
  return {
    name: vm.name,
    region: vm.region,
    gpuType: vm.gpuType,
    gpuDisplayName: vm.gpuDisplayName,
    gpuCount: vm.gpuCount,
    gpuMemoryInGb: vm.gpuMemoryInGb,
    cpuCores: vm.cpuCores,
    memoryInGb: vm.memoryInGb,
    storageInGb: vm.storageInGb,
    osInfo: vm.osInfo,
    isSpot: vm.isSpot,
    ipAddress: vm.ipAddress,
    domainName: vm.domainName,
    sshTemplate: vm.sshTemplate,
    notebookUrl: vm.notebookUrl,
  };
}
