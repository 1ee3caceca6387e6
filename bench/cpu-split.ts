// Where the processes run. In a cluster the apiserver and etcd have control-plane nodes to themselves and
// the operator runs on a worker; on one machine they would share every CPU, and the operator's CPU would be
// taken from the apiserver it is measured against (the raw loops have no operator to share with). So by
// default the control plane gets the first half of the CPUs and the benchmark, the simulator (the cloud)
// and the operator the rest, in the raw loops and the operator runs alike. `--shared-cpus` turns it off.
import { execFileSync } from 'node:child_process';
import { availableParallelism } from 'node:os';

export interface CpuSplit {
  /** CPU list (taskset syntax) of etcd and the apiserver. */
  readonly controlPlane: string;
  /** CPU list of this process (the benchmark and the simulator) and every operator it starts afterwards. */
  readonly operatorSimulatorAndBench: string;
}

function cpuList(from: number, to: number): string {
  return from === to ? String(from) : `${from}-${to}`;
}

/** The halves for this machine, or undefined when it has a single CPU. */
export function planCpuSplit(cpus = availableParallelism()): CpuSplit | undefined {
  if (cpus < 2) return undefined;
  const half = Math.floor(cpus / 2);
  return { controlPlane: cpuList(0, half - 1), operatorSimulatorAndBench: cpuList(half, cpus - 1) };
}

/**
 * Pins every thread of the control plane's processes and of this one. Children inherit the affinity of
 * the thread that starts them, so operators spawned later run on `operatorSimulatorAndBench` too.
 */
export function applyCpuSplit(split: CpuSplit, controlPlanePids: readonly number[]): void {
  for (const pid of controlPlanePids) pin(split.controlPlane, pid);
  pin(split.operatorSimulatorAndBench, process.pid);
}

function pin(cpus: string, pid: number): void {
  try {
    execFileSync('taskset', ['--all-tasks', '--cpu-list', '--pid', cpus, String(pid)], { stdio: 'ignore' });
  } catch (error) {
    throw new Error(`taskset could not pin process ${pid} to CPUs ${cpus} (run with --shared-cpus?)`, {
      cause: error,
    });
  }
}
