import type { Cancellable, Scheduler } from './scheduler.ts';

/** A resource with at most one state-machine step pending. */
export interface Stepping {
  pending: Cancellable | undefined;
}

/**
 * The pace of every state machine: each step (INITIALIZING → RUNNING, PAUSING → PAUSED, ...) takes
 * `stepMs` of simulated time. With 0 steps are instant: they happen before the call that started
 * them returns, so a create is answered already RUNNING.
 */
export class Steps {
  readonly #scheduler: Scheduler;
  readonly #stepMs: number;

  constructor(scheduler: Scheduler, stepMs: number) {
    if (!Number.isFinite(stepMs) || stepMs < 0)
      throw new RangeError(`transitionMs must be >= 0, got ${stepMs}`);
    this.#scheduler = scheduler;
    this.#stepMs = stepMs;
  }

  /** Makes `step` the resource's next step, one step from now, replacing any step it had pending. */
  schedule(resource: Stepping, step: () => void): void {
    this.cancel(resource);
    if (this.#stepMs === 0) {
      step();
      return;
    }
    resource.pending = this.#scheduler.after(this.#stepMs, () => {
      resource.pending = undefined;
      step();
    });
  }

  cancel(resource: Stepping): void {
    resource.pending?.cancel();
    resource.pending = undefined;
  }
}
