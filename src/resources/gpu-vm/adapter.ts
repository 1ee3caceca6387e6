import type { GpuCloudClient } from '../../api/client.ts';
import type { Vm, VmTypeItem } from '../../api/schemas/vms.ts';
import { type Clock, systemClock } from '../../lib/clock.ts';
import { CREATE_NAME } from '../../managed/annotations.ts';
import { act, cloudName, type ExternalKind, type Readiness } from '../../managed/external-kind.ts';
import { fingerprintOf, ignoreNotFound, readinessFrom, unlessNotFound } from '../common/cloud.ts';
import { presentStrings, sshEndpoint } from '../common/schema.ts';
import { perHourOf, priceBookOf } from '../pricing/books.ts';
import { gpuVmCloudPrice, gpuVmSpecQuote } from '../pricing/gpu-vm.ts';
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
    isOwnCreate: async (mr, vm) => vm.name === (mr.metadata.annotations?.[CREATE_NAME] ?? cloudName(mr)),
    create: async (mr) => {
      const { vmTypeId, region, isSpot, volumeMountPaths } = mr.spec;
      return client.vms.create({
        vmTypeId,
        region,
        isSpot: isSpot ?? false,
        name: cloudName(mr),
        ...(volumeMountPaths ? { volumeMountPaths } : {}),
      });
    },
    demand: async ({ spec }) => ({
      gpus: await types.gpusOf(spec.vmTypeId),
      live: true,
      perHour: async () => perHourOf((await gpuVmSpecQuote(priceBookOf(client), spec)).price),
    }),
    priceOf: async (vm) => perHourOf(await gpuVmCloudPrice(priceBookOf(client), vm)),
    heldGpus: vmHeldGpus,
    plan: async (mr, vm) => {
      const name = cloudName(mr);
      if (vm.name === name) return { kind: 'in-sync' };
      return act('Renaming', `renaming VM ${vm.id} from ${vm.name} to ${name}`, () =>
        client.vms.update(vm.id, { name }),
      );
    },
    lateInit: { from: (vm) => ({ name: vm.name, isSpot: vm.isSpot }), cleared: {} },
    connectionDetails: (status) => ({
      ...presentStrings({
        ipAddress: status.ipAddress,
        domainName: status.domainName,
        notebookUrl: status.notebookUrl,
        sshCommand: status.sshTemplate,
      }),
      ...sshEndpoint(status.sshTemplate),
    }),
    // The VM object does not report its type: region and capacity kind are what can be compared.
    drift: ({ spec }, vm) => [
      ...(vm.region === spec.region ? [] : ['region']),
      ...(spec.isSpot === undefined || vm.isSpot === spec.isSpot ? [] : ['isSpot']),
    ],
    spot: {
      requested: (spec) => spec.isSpot === true,
      preempted: (vm) => vm.isSpot && vm.status === 'FAILED',
    },
    // Terminate is refused (11001) while the VM is starting: that error is transient and retried with
    // backoff; a key without terminate permission (11002) is terminal and shown on the resource.
    delete: (id) => ignoreNotFound(client.vms.terminate(id)),
    // A VM cannot pause: its schema requires deadlineAction Delete with a deadline.
    deadline: (spec) =>
      spec.activeDeadlineSeconds === undefined
        ? undefined
        : { seconds: spec.activeDeadlineSeconds, action: 'Delete' },
    readiness: (_mr, vm) => readinessFrom(vm.status, readiness),
    phaseOf: (vm) => vm.status,
    statusOf: (vm): Partial<GpuVmStatus> => ({
      name: vm.name,
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
