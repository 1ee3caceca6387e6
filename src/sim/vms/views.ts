import type { LegacyVm, Vm, VmTypes } from '../../api/schemas/index.ts';
import { CURRENCY, GPU_MODELS, usd, VM_OS, VM_TYPES } from '../catalog.ts';
import type { SimContext } from '../context.ts';
import type { VmRecord } from './vm.ts';

const DOMAIN = 'vm.gpucloud.sim';

/** What v1 and v2 show alike. */
function common(vm: VmRecord) {
  const { model, gpuCount } = vm.type;
  const id = Number(vm.id);
  const ipAddress = `100.${64 + ((id >> 16) & 63)}.${(id >> 8) & 255}.${id & 255}`;
  return {
    id: vm.id,
    orgId: vm.orgId,
    gpuDisplayName: model.displayName,
    ipAddress,
    domainName: `${vm.id}.${DOMAIN}`,
    cpuCores: model.vcpuPerGpu * gpuCount,
    memoryInGb: String(model.ramPerGpuInGb * gpuCount),
    gpuCount,
    gpuMemoryInGb: String(model.gpuMemoryInGb),
    region: vm.region,
    storageInGb: String(model.localDiskPerGpuInGb * gpuCount),
    notebookUrl: `https://${vm.id}.${DOMAIN}/jupyter`,
    sshTemplate: `ssh -p 22 ubuntu@${ipAddress}`,
    createdAt: vm.createdAt,
    terminatedAt: vm.terminatedAt,
    updatedAt: vm.updatedAt,
    osInfo: `${VM_OS.name} ${VM_OS.version}`,
    gpuType: model.gpuType,
  };
}

export function vmView(vm: VmRecord): Vm {
  return { ...common(vm), name: vm.name, status: vm.status, isSpot: vm.isSpot };
}

export function legacyVmView(vm: VmRecord): LegacyVm {
  return { ...common(vm), nickname: vm.name, status: vm.status, isSpot: vm.isSpot };
}

/** The VM types listing: per GPU model, per region, each GPU count with its price and availability. */
export function vmTypesView({ capacity, market }: Pick<SimContext, 'capacity' | 'market'>): VmTypes {
  return GPU_MODELS.map((model) => ({
    gpuType: model.gpuType,
    regions: model.regions.map((region) => ({
      region,
      types: VM_TYPES.filter((type) => type.model === model).map((type) => {
        const available = capacity.free(region, model.gpuType) >= type.gpuCount;
        const supportSpot = market.spotOffered(model);
        return {
          vmTypeId: type.vmTypeId,
          gpuCount: type.gpuCount,
          pricePerHour: usd(market.hourly(model, type.gpuCount, false)),
          supportSpot,
          ...(supportSpot ? { spotPricePerHour: usd(market.hourly(model, type.gpuCount, true)) } : {}),
          currency: CURRENCY,
          displayName: `${model.displayName} × ${type.gpuCount}`,
          cpuCores: model.vcpuPerGpu * type.gpuCount,
          memoryInGb: String(model.ramPerGpuInGb * type.gpuCount),
          gpuMemoryInGb: String(model.gpuMemoryInGb),
          gpuTotalMemoryInGb: String(model.gpuMemoryInGb * type.gpuCount),
          storageType: VM_OS.storageType,
          storageCapacityInGb: String(model.localDiskPerGpuInGb * type.gpuCount),
          osName: VM_OS.name,
          osVersion: VM_OS.version,
          supportOnDemand: true,
          ondemandAvailable: available,
          spotAvailable: supportSpot && capacity.free(region, model.gpuType, true) >= type.gpuCount,
        };
      }),
    })),
  }));
}
