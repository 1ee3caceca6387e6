import type { ChurnResult } from './churn-run.ts';
import type { CpuSplit } from './cpu-split.ts';
import type { InProcessIdleResult } from './idle-in-process.ts';
import type { IdleRunResult } from './idle-run.ts';
import type { ImageResult } from './image.ts';
import type { MixedResult } from './mixed-run.ts';
import type { SizeResult } from './size-run.ts';

export type Outcome<T> =
  | { ok: true; seconds: number; result: T }
  | { ok: false; seconds: number; error: string };

export interface BenchResults {
  startedAt: string;
  durationSeconds: number;
  command: string;
  machine: {
    cpus: number;
    cpuModel: string;
    memoryGb: number;
    kernel: string;
    node: string;
    loadavgAtStart: number[];
  };
  settings: {
    operatorFlags: string[];
    simulator: Record<string, unknown>;
    apiserver: string;
    benchConcurrency: number;
    /** Where the control plane ran, and where the rest (bench/cpu-split.ts). */
    cpus: CpuSplit | 'shared';
    operatorBuild: string;
    operatorNodeOptions: string;
    /** --operator-env: what the operator's environment had beyond the in-cluster one. */
    operatorEnv?: string[];
  };
  sizes: Array<{ size: number } & Outcome<SizeResult>>;
  mixed: Outcome<MixedResult> | undefined;
  /** --idle-check-window: the size runs were idle-check runs (bench/idle-run.ts) instead. */
  idleRuns?: Array<{ size: number } & Outcome<IdleRunResult>>;
  /** --idle-check-in-process: the idle schedule alone, no apiserver, no operator process. */
  idleInProcess?: Array<{ keys: number } & Outcome<InProcessIdleResult>>;
  /** --image: the operator's image, its size and its start-up (bench/image.ts). */
  image?: Outcome<ImageResult>;
  /** --churn: create/delete cycles, and what the operator kept of them after (bench/churn-run.ts). */
  churn?: Outcome<ChurnResult>;
}

/** Runs `work`, timing it; a failure is recorded instead of ending the benchmark. */
export async function attempt<T>(work: () => Promise<T>): Promise<Outcome<T>> {
  const began = Date.now();
  const seconds = () => Math.round((Date.now() - began) / 100) / 10;
  try {
    const result = await work();
    return { ok: true, seconds: seconds(), result };
  } catch (error) {
    return { ok: false, seconds: seconds(), error: error instanceof Error ? error.message : String(error) };
  }
}
