import type { AddressInfo } from 'node:net';
import type { PoolUsage } from './capacity.ts';
import { type FaultConfig, type FaultPatch, NO_FAULTS } from './faults.ts';
import { createSimServer } from './http/server.ts';
import type { ModelPrices, PriceChange } from './market.ts';
import { DEFAULTS, type SimulatorOptions } from './options.ts';
import { Simulation } from './simulation.ts';
import { type SimState, snapshot } from './state.ts';

export type { CallRecord } from './calls.ts';
export type { CapacityOptions, CapacityPoolOption, PoolUsage } from './capacity.ts';
export type { FaultConfig, FaultPatch } from './faults.ts';
export type { ModelPrices, PriceChange } from './market.ts';

import type { CallRecord } from './calls.ts';

export type { ApiKeyOption } from './keys.ts';
export type { SimulatorOptions } from './options.ts';
export type { EndpointState, PodState, SimState, TaskState, VmState } from './state.ts';

/** Fault injection, at run time. */
export interface FaultControl {
  readonly config: FaultConfig;
  /** Changes some settings; the others keep their values. Throws naming a bad field. */
  set(patch: FaultPatch): FaultConfig;
  /** Back to no faults at all. */
  reset(): FaultConfig;
  /** Grants or withdraws a key's permission to terminate VMs (without it: code 11002). */
  setTerminatePermission(apiKey: string, allowed: boolean): void;
  /** Breaks a running pod now; false if it is not running. */
  failPod(id: string, status: 'FAILED' | 'DEGRADED'): boolean;
  /** Preempts a running spot pod or spot VM now; false if there is none with this id. */
  preempt(id: string): boolean;
}

export interface RunningSimulator {
  /** Base URL of the API, e.g. `http://127.0.0.1:40123`. */
  readonly url: string;
  readonly faults: FaultControl;
  /** Read-only view of everything the simulated cloud holds. */
  readonly state: { snapshot(): SimState };
  /** API calls received per operation name (unrouted calls count as `(unrouted)`), and a log of them. */
  readonly calls: {
    snapshot(): { total: number; byOperation: Record<string, number> };
    /** The routed calls, oldest first, with their method and path ids (bounded). */
    log(): readonly CallRecord[];
    reset(): void;
  };
  /** Simulated time: `advance` moves it forward and runs every step that became due. */
  readonly clock: { now(): number; advance(ms: number): void };
  /** Changes a GPU pool's size at run time. */
  readonly capacity: {
    setTotal(region: string, gpuType: string, gpus: number): void;
    /** Limits the pool's spot GPUs (undefined: the whole pool), so spot runs out before on-demand. */
    setSpotTotal(region: string, gpuType: string, gpus: number | undefined): void;
    /** Pods created in the pool from now on fail while INITIALIZING, as when it had no machine after all. */
    setStartFailures(region: string, gpuType: string, fail: boolean): void;
    describe(): PoolUsage[];
  };
  /** Today's prices: searches and listings quote them; objects keep the price they were created at. */
  readonly market: { set(gpuType: string, change: PriceChange): ModelPrices };
  /** Pod metrics under test control. */
  readonly metrics: {
    /**
     * From the current simulated time on, the pod's `gpu_utilization` series report `percent`
     * (0..100) for GPU `gpuIndex`, or for every GPU when it is omitted; earlier samples keep their
     * values. Samples still exist only while the pod is RUNNING. Throws naming what is wrong.
     */
    setGpuUtilization(podId: string, percent: number, gpuIndex?: number): void;
  };
  /** API keys at run time, as a key rotation changes them. */
  readonly keys: { add(key: string, org: string): void; revoke(key: string): void };
  /** Closes every connection, cancels every pending step and delivery. */
  stop(): Promise<void>;
}

/** Starts the simulator on `host:port` (a free port by default) and resolves once it listens. */
export async function startSimulator(options: SimulatorOptions): Promise<RunningSimulator> {
  const sim = new Simulation(options);
  const server = createSimServer(sim, {
    maxBodyBytes: options.maxBodyBytes ?? DEFAULTS.maxBodyBytes,
    adminToken: options.adminToken,
  });
  const host = options.host ?? DEFAULTS.host;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  let stopped: Promise<void> | undefined;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    faults: {
      get config() {
        return sim.ctx.faults.config;
      },
      set: (patch) => sim.setFaults(patch),
      reset: () => sim.setFaults(NO_FAULTS),
      setTerminatePermission: (apiKey, allowed) => sim.keys.setCanTerminate(apiKey, allowed),
      failPod: (id, status) => sim.failures.failPod(id, status),
      preempt: (id) => sim.failures.preempt(id),
    },
    state: { snapshot: () => snapshot(sim) },
    metrics: {
      setGpuUtilization: (podId, percent, gpuIndex) => sim.pods.setGpuUtilization(podId, percent, gpuIndex),
    },
    keys: { add: (key, org) => sim.keys.add(key, org), revoke: (key) => sim.keys.revoke(key) },
    calls: {
      snapshot: () => sim.calls.snapshot(),
      log: () => sim.calls.log(),
      reset: () => sim.calls.reset(),
    },
    clock: { now: () => sim.ctx.clock.now(), advance: (ms) => sim.advance(ms) },
    capacity: {
      setTotal: (region, gpuType, gpus) => sim.ctx.capacity.setTotal(region, gpuType, gpus),
      setSpotTotal: (region, gpuType, gpus) => sim.ctx.capacity.setSpotTotal(region, gpuType, gpus),
      setStartFailures: (region, gpuType, fail) => sim.ctx.capacity.setStartFailures(region, gpuType, fail),
      describe: () => sim.ctx.capacity.describe(),
    },
    market: { set: (gpuType, change) => sim.ctx.market.set(gpuType, change) },
    stop() {
      stopped ??= (async () => {
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeAllConnections();
        await sim.stop();
        await closed;
      })();
      return stopped;
    },
  };
}
