import type { Vm } from '../../api/schemas/vms.ts';

/** The GPUs a VM holds, or may hold at any moment: every state but stopped and terminated. */
export function vmHeldGpus(vm: Pick<Vm, 'status' | 'gpuCount'>): number {
  return vm.status === 'STOPPED' || vm.status === 'TERMINATED' ? 0 : vm.gpuCount;
}
