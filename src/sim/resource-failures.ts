import type { SimContext } from './context.ts';
import type { FaultConfig } from './faults.ts';
import type { PodService } from './pods/service.ts';
import type { Cancellable } from './scheduler.ts';
import type { VmService } from './vms/service.ts';

/** How often, in simulated time, running resources are exposed to the failure rates. */
const SWEEP_MS = 1000;

/**
 * Failures of running resources: periodic sweeps that apply the configured rates (only while a
 * rate is set), and the same failures on demand for one resource.
 */
export class ResourceFailures {
  readonly #ctx: SimContext;
  readonly #pods: PodService;
  readonly #vms: VmService;
  #sweep: Cancellable | undefined;
  #lastSweep = 0;

  constructor(ctx: SimContext, pods: PodService, vms: VmService) {
    this.#ctx = ctx;
    this.#pods = pods;
    this.#vms = vms;
  }

  /** Starts or stops sweeping when the fault configuration changes. */
  configure(config: FaultConfig): void {
    const active = config.podFailureRate > 0 || config.podDegradeRate > 0 || config.spotPreemptionRate > 0;
    if (active && this.#sweep === undefined) {
      this.#lastSweep = this.#ctx.clock.now();
      this.#scheduleSweep();
    } else if (!active) {
      this.#sweep?.cancel();
      this.#sweep = undefined;
    }
  }

  /** Breaks one pod now. False when the pod is not running (or does not exist). */
  failPod(id: string, status: 'FAILED' | 'DEGRADED'): boolean {
    const pod = this.#pods.store.find(id);
    return pod !== undefined && this.#pods.break(pod, status, `pod ${status.toLowerCase()} (injected fault)`);
  }

  /** Preempts one running spot pod or spot VM now. False when there is no such running spot resource. */
  preempt(id: string): boolean {
    const pod = this.#pods.store.find(id);
    if (pod !== undefined)
      return pod.spec.isSpot && this.#pods.break(pod, 'FAILED', 'spot instance preempted');
    const vm = this.#vms.store.find(id);
    return vm?.isSpot === true && this.#vms.preempt(vm);
  }

  #scheduleSweep(): void {
    this.#sweep = this.#ctx.scheduler.after(SWEEP_MS, () => {
      this.#run();
      this.#scheduleSweep();
    });
  }

  #run(): void {
    const now = this.#ctx.clock.now();
    const elapsed = now - this.#lastSweep;
    this.#lastSweep = now;
    const { faults } = this.#ctx;
    const { podFailureRate, podDegradeRate, spotPreemptionRate } = faults.config;
    // Copies: breaking a pod moves it out of the status set being walked.
    for (const pod of [...this.#pods.store.withStatus('RUNNING')]) {
      if (pod.spec.isSpot && faults.happensWithin(spotPreemptionRate, elapsed)) {
        this.#pods.break(pod, 'FAILED', 'spot instance preempted');
      } else if (faults.happensWithin(podFailureRate, elapsed)) {
        this.#pods.break(pod, 'FAILED', 'pod failed (injected fault)');
      } else if (faults.happensWithin(podDegradeRate, elapsed)) {
        this.#pods.break(pod, 'DEGRADED', 'pod degraded (injected fault)');
      }
    }
    for (const vm of [...this.#vms.store.withStatus('RUNNING')]) {
      if (vm.isSpot && faults.happensWithin(spotPreemptionRate, elapsed)) this.#vms.preempt(vm);
    }
  }
}
