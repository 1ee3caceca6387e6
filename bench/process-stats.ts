// Memory and CPU of processes from /proc (Linux only): the operator's footprint, and the control
// plane's share of the machine while it works.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

export interface Usage {
  rssBytes: number;
  /** User plus system CPU time since the process started. */
  cpuSeconds: number;
}

const TICKS_PER_SECOND = clockTicks();

function clockTicks(): number {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
}

/** The fields of /proc/<pid>/stat after the command name, which may itself contain spaces. */
function statFields(pid: number): string[] | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return text.slice(text.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

/** The process's usage now, or undefined once it has exited. */
export function usageOf(pid: number): Usage | undefined {
  const fields = statFields(pid);
  if (!fields) return undefined;
  // After the name: state(0) ppid(1) ... utime(11) stime(12).
  const cpuSeconds = (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
  let rssBytes = 0;
  try {
    const match = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    rssBytes = Number(match?.[1] ?? 0) * 1024;
  } catch {
    return undefined;
  }
  return { rssBytes, cpuSeconds };
}

/** The direct children of this process, but `except`: here, etcd and the apiserver. */
export function childPids(except: readonly number[]): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .map(Number)
    .filter((pid) => !except.includes(pid) && statFields(pid)?.[1] === String(process.pid));
}

/** Summed CPU seconds of `pids` (exited ones count as zero). */
export function cpuOf(pids: readonly number[]): number {
  return pids.reduce((sum, pid) => sum + (usageOf(pid)?.cpuSeconds ?? 0), 0);
}

export interface CpuMark {
  at: number;
  operator: number;
  controlPlane: number;
  bench: number;
}

/** CPU used so far by the operator, the control plane and this process, to diff two marks. */
export function markCpu(operatorPid: number, controlPlane: readonly number[]): CpuMark {
  const own = process.cpuUsage();
  return {
    at: Date.now(),
    operator: usageOf(operatorPid)?.cpuSeconds ?? 0,
    controlPlane: cpuOf(controlPlane),
    bench: (own.user + own.system) / 1e6,
  };
}

/** CPU each party used between two marks, as a share of one core (1.0 = one core busy). */
export function cpuBetween(from: CpuMark, to: CpuMark) {
  const seconds = (to.at - from.at) / 1000;
  const share = (a: number, b: number) => Math.round(((b - a) / seconds) * 100) / 100;
  return {
    seconds: Math.round(seconds * 10) / 10,
    operatorCpuSeconds: Math.round((to.operator - from.operator) * 100) / 100,
    operatorCores: share(from.operator, to.operator),
    controlPlaneCores: share(from.controlPlane, to.controlPlane),
    benchAndSimulatorCores: share(from.bench, to.bench),
  };
}

/** Samples the RSS of `pid` until stopped; reports the peak. */
export class RssSampler {
  #peak = 0;
  readonly #timer: NodeJS.Timeout;

  constructor(pid: number, everyMs = 200) {
    const sample = () => {
      this.#peak = Math.max(this.#peak, usageOf(pid)?.rssBytes ?? 0);
    };
    sample();
    this.#timer = setInterval(sample, everyMs);
  }

  stop(): number {
    clearInterval(this.#timer);
    return this.#peak;
  }
}

export function megabytes(bytes: number): number {
  return Math.round((bytes / 1024 / 1024) * 10) / 10;
}
