import type { Clock } from '../../lib/clock.ts';

/**
 * Queue autoscaling of a QUEUE endpoint, as the HPA scales on a metric: workers = ceil(tasks in flight /
 * target per worker), within [minWorkers, maxWorkers]. It never flaps: a change within the tolerance
 * band is no change, a scale-up acts at once, and a scale-down takes the highest recommendation of the
 * last `scaleDownDelaySeconds` (the HPA's stabilization window), so a queue that dips for a moment keeps
 * its workers. The recommendations live in memory, as the HPA's do: after a restart a scale-down waits a
 * whole window.
 */

export interface AutoscalingSpec {
  minWorkers: number;
  maxWorkers: number;
  targetQueuePerWorker: number;
  scaleDownDelaySeconds?: number | undefined;
}

/** What the autoscaler decided, and why: written to status as it is. */
export interface Decision {
  desiredWorkers: number;
  /** CamelCase and stable: the status changes only when the decision does. */
  reason:
    | 'Steady'
    | 'ScaleUp'
    | 'ScaleDown'
    | 'ScaleDownDelayed'
    | 'AtMinimum'
    | 'AtMaximum'
    | 'AboveMaximum';
  /** Tasks in flight (processing and delivered) the decision was made on. */
  queue: number;
}

/** Within this fraction of the target per worker, the current count stands (the HPA's default is 10%). */
export const TOLERANCE = 0.1;
export const DEFAULT_SCALE_DOWN_DELAY_S = 300;

interface Watch {
  /** When this process first decided for the endpoint: the window before that is unknown to it. */
  since: number;
  recommendations: Array<{ at: number; workers: number }>;
}

export class QueueAutoscaler {
  readonly #watches = new Map<string, Watch>();
  readonly #clock: Clock;

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  /** The workers endpoint `key` should have, now having `current`, with `queue` tasks in flight. */
  decide(key: string, spec: AutoscalingSpec, current: number, queue: number): Decision {
    const now = this.#clock.now();
    const { minWorkers, maxWorkers, targetQueuePerWorker } = spec;
    if (current > maxWorkers) return { desiredWorkers: maxWorkers, reason: 'AboveMaximum', queue };
    const windowMs = (spec.scaleDownDelaySeconds ?? DEFAULT_SCALE_DOWN_DELAY_S) * 1000;
    const wanted = Math.ceil(queue / targetQueuePerWorker);
    const within = current > 0 && Math.abs(queue / (current * targetQueuePerWorker) - 1) <= TOLERANCE;
    const recommended = clamp(within ? current : wanted, minWorkers, maxWorkers);
    const watch = this.#watches.get(key) ?? { since: now, recommendations: [] };
    watch.recommendations = watch.recommendations.filter((entry) => entry.at > now - windowMs);
    watch.recommendations.push({ at: now, workers: recommended });
    this.#watches.set(key, watch);
    if (recommended > current) return { desiredWorkers: recommended, reason: 'ScaleUp', queue };
    if (recommended === current) {
      const reason = wanted > maxWorkers ? 'AtMaximum' : wanted < minWorkers ? 'AtMinimum' : 'Steady';
      return { desiredWorkers: current, reason, queue };
    }
    // Down only to the highest recommendation of the whole window; one this process has not watched
    // whole may have held a higher one.
    const highest = Math.max(...watch.recommendations.map((entry) => entry.workers));
    const stable = now - watch.since >= windowMs ? highest : current;
    if (stable < current) return { desiredWorkers: stable, reason: 'ScaleDown', queue };
    return { desiredWorkers: current, reason: 'ScaleDownDelayed', queue };
  }

  /** Forgets an endpoint that no longer autoscales, or is gone. */
  forget(key: string): void {
    this.#watches.delete(key);
  }
}

function clamp(value: number, min: number, max: number): number {
  return Math.min(max, Math.max(min, value));
}
