import { allOperations } from '../api/operations.ts';
import { CallCounter } from './calls.ts';
import { Capacity } from './capacity.ts';
import { SimClock } from './clock.ts';
import type { SimContext } from './context.ts';
import { Courier } from './delivery.ts';
import { type FaultConfig, type FaultPatch, Faults } from './faults.ts';
import { IdSequence } from './ids.ts';
import { KeyRegistry } from './keys.ts';
import { Steps } from './lifecycle.ts';
import { Market } from './market.ts';
import { DEFAULTS, type SimulatorOptions } from './options.ts';
import { PodService } from './pods/service.ts';
import { Random } from './random.ts';
import { ResourceFailures } from './resource-failures.ts';
import { Scheduler } from './scheduler.ts';
import { EndpointService } from './serverless/service.ts';
import { VmService } from './vms/service.ts';

const OPERATION_NAMES = new Set(allOperations.map((operation) => operation.name));

/** The whole simulated cloud, without its HTTP face: every resource, the clock and the faults. */
export class Simulation {
  readonly ctx: SimContext;
  readonly keys: KeyRegistry;
  readonly calls = new CallCounter();
  readonly pods: PodService;
  readonly vms: VmService;
  readonly endpoints: EndpointService;
  readonly failures: ResourceFailures;

  constructor(options: SimulatorOptions) {
    this.keys = new KeyRegistry(options.apiKeys);
    const clock = new SimClock(options.manualTime);
    const scheduler = new Scheduler(clock, (error) =>
      console.error('simulator: a scheduled action failed', error),
    );
    this.ctx = {
      clock,
      scheduler,
      steps: new Steps(scheduler, options.transitionMs ?? DEFAULTS.transitionMs),
      ids: new IdSequence(),
      capacity: new Capacity(options.capacity),
      market: new Market(),
      faults: new Faults(new Random(options.seed ?? DEFAULTS.seed)),
      courier: new Courier(scheduler, { ...DEFAULTS.delivery, ...options.delivery }),
      retentionMs: options.retentionMs ?? DEFAULTS.retentionMs,
    };
    this.pods = new PodService(this.ctx);
    this.vms = new VmService(this.ctx);
    this.endpoints = new EndpointService(this.ctx);
    this.failures = new ResourceFailures(this.ctx, this.pods, this.vms);
    if (options.faults !== undefined) this.setFaults(options.faults);
  }

  /** Changes the active faults (a partial change; unnamed settings keep their values). */
  setFaults(patch: FaultPatch): FaultConfig {
    const unknown = patch.operations?.filter((name) => !OPERATION_NAMES.has(name)) ?? [];
    if (unknown.length > 0) throw new Error(`faults.operations: no operation is named ${unknown.join(', ')}`);
    const config = this.ctx.faults.update(patch);
    this.failures.configure(config);
    return config;
  }

  /** Moves simulated time forward and carries out everything that became due. */
  advance(ms: number): void {
    this.ctx.scheduler.advance(ms);
  }

  async stop(): Promise<void> {
    this.ctx.scheduler.stop();
    await this.ctx.courier.close();
  }
}
