// The kernel settings the kubelet sets at start (pkg/kubelet/cm: setupKernelTunables). The node's mount
// namespace hides them behind copies (see tools/controlplane/supervise.go), so the host's never change;
// they are still read before the node starts and checked (and put back if ever changed) when it stops.
import { readFile, writeFile } from 'node:fs/promises';

export const KUBELET_SYSCTLS = [
  'vm.overcommit_memory',
  'vm.panic_on_oom',
  'kernel.panic',
  'kernel.panic_on_oops',
  'kernel.keys.root_maxkeys',
  'kernel.keys.root_maxbytes',
] as const;

export type SysctlValues = Readonly<Record<(typeof KUBELET_SYSCTLS)[number], string>>;

function path(name: string): string {
  return `/proc/sys/${name.replaceAll('.', '/')}`;
}

export async function readSysctls(): Promise<SysctlValues> {
  const entries = await Promise.all(
    KUBELET_SYSCTLS.map(async (name) => [name, (await readFile(path(name), 'utf8')).trim()] as const),
  );
  return Object.fromEntries(entries) as SysctlValues;
}

/** Puts back every setting that differs from `recorded`; says which ones did (`name: was -> now`). */
export async function restoreSysctls(recorded: SysctlValues): Promise<string[]> {
  const current = await readSysctls();
  const changed: string[] = [];
  for (const name of KUBELET_SYSCTLS) {
    if (current[name] === recorded[name]) continue;
    changed.push(`${name}: ${recorded[name]} -> ${current[name]}`);
    await writeFile(path(name), recorded[name]);
  }
  return changed;
}
