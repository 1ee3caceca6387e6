import { Counter, exponentialBuckets, Gauge, Histogram, type Registry } from 'prom-client';
import type { EventDropCause } from '../kube/event-recorder.ts';
import type { WorkQueueObserver } from './work-queue.ts';

/** The `result` label of `controller_runtime_reconcile_total`. */
export const RECONCILE_OUTCOMES = ['success', 'error', 'requeue', 'requeue_after'] as const;
export type ReconcileOutcome = (typeof RECONCILE_OUTCOMES)[number];

/** What one controller reports; obtained from `RuntimeMetrics.controller`. */
export interface ControllerMetrics {
  /** Observer to pass to the controller's work queue. */
  readonly queue: WorkQueueObserver;
  reconcileStarted(): void;
  /** `terminal`: an error that retrying cannot fix; counted as an error, and apart. */
  reconcileFinished(outcome: ReconcileOutcome, seconds: number, terminal?: boolean): void;
}

// controller-runtime's buckets, so dashboards built for Go operators read ours the same way.
const RECONCILE_BUCKETS = [
  0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1, 1.25, 1.5,
  1.75, 2, 2.5, 3, 3.5, 4, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60,
];
const QUEUE_BUCKETS = exponentialBuckets(1e-8, 10, 12);

/**
 * The metrics of controller-runtime and client-go's work queue and leader election, under their
 * names, registered on the given registry. Create one per registry.
 */
export class RuntimeMetrics {
  readonly #reconcileTotal: Counter<'controller' | 'result'>;
  readonly #reconcileErrors: Counter<'controller'>;
  readonly #terminalErrors: Counter<'controller'>;
  readonly #reconcileTime: Histogram<'controller'>;
  readonly #activeWorkers: Gauge<'controller'>;
  readonly #maxConcurrent: Gauge<'controller'>;
  readonly #depth: Gauge<'name'>;
  readonly #adds: Counter<'name'>;
  readonly #queueDuration: Histogram<'name'>;
  readonly #workDuration: Histogram<'name'>;
  readonly #retries: Counter<'name'>;
  readonly #leader: Gauge<'name'>;
  readonly #eventsDropped: Counter<'cause'>;
  readonly #queues = new Map<string, QueueMetrics>();

  constructor(registry: Registry) {
    const registers = [registry];
    this.#reconcileTotal = new Counter({
      name: 'controller_runtime_reconcile_total',
      help: 'Total number of reconciliations per controller',
      labelNames: ['controller', 'result'],
      registers,
    });
    this.#reconcileErrors = new Counter({
      name: 'controller_runtime_reconcile_errors_total',
      help: 'Total number of reconciliation errors per controller',
      labelNames: ['controller'],
      registers,
    });
    this.#terminalErrors = new Counter({
      name: 'controller_runtime_terminal_reconcile_errors_total',
      help: 'Total number of terminal reconciliation errors per controller',
      labelNames: ['controller'],
      registers,
    });
    this.#reconcileTime = new Histogram({
      name: 'controller_runtime_reconcile_time_seconds',
      help: 'Length of time per reconciliation per controller',
      labelNames: ['controller'],
      buckets: RECONCILE_BUCKETS,
      registers,
    });
    this.#activeWorkers = new Gauge({
      name: 'controller_runtime_active_workers',
      help: 'Number of currently used workers per controller',
      labelNames: ['controller'],
      registers,
    });
    this.#maxConcurrent = new Gauge({
      name: 'controller_runtime_max_concurrent_reconciles',
      help: 'Maximum number of concurrent reconciles per controller',
      labelNames: ['controller'],
      registers,
    });
    this.#depth = new Gauge({
      name: 'workqueue_depth',
      help: 'Current depth of workqueue',
      labelNames: ['name'],
      registers,
    });
    this.#adds = new Counter({
      name: 'workqueue_adds_total',
      help: 'Total number of adds handled by workqueue',
      labelNames: ['name'],
      registers,
    });
    this.#queueDuration = new Histogram({
      name: 'workqueue_queue_duration_seconds',
      help: 'How long in seconds an item stays in workqueue before being requested',
      labelNames: ['name'],
      buckets: QUEUE_BUCKETS,
      registers,
    });
    this.#workDuration = new Histogram({
      name: 'workqueue_work_duration_seconds',
      help: 'How long in seconds processing an item from workqueue takes',
      labelNames: ['name'],
      buckets: QUEUE_BUCKETS,
      registers,
    });
    this.#retries = new Counter({
      name: 'workqueue_retries_total',
      help: 'Total number of retries handled by workqueue',
      labelNames: ['name'],
      registers,
    });
    const queues = this.#queues;
    new Gauge({
      name: 'workqueue_unfinished_work_seconds',
      help: 'How many seconds of work has been done that is in progress and has not been observed by work_duration',
      labelNames: ['name'],
      registers,
      collect() {
        for (const [name, queue] of queues) this.set({ name }, queue.unfinishedSeconds());
      },
    });
    new Gauge({
      name: 'workqueue_longest_running_processor_seconds',
      help: 'How many seconds has the longest running processor for workqueue been running',
      labelNames: ['name'],
      registers,
      collect() {
        for (const [name, queue] of queues) this.set({ name }, queue.longestRunningSeconds());
      },
    });
    this.#leader = new Gauge({
      name: 'leader_election_master_status',
      help: 'Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master',
      labelNames: ['name'],
      registers,
    });
    this.#eventsDropped = new Counter({
      name: 'gpucloud_events_dropped_total',
      help: 'Kubernetes Events not written: rate_limited (one object emitted too many) or queue_full (a burst)',
      labelNames: ['cause'],
      registers,
    });
    for (const cause of ['rate_limited', 'queue_full'] as const) this.#eventsDropped.inc({ cause }, 0);
  }

  /** Counts an Event the recorder did not write. */
  eventDropped(cause: EventDropCause): void {
    this.#eventsDropped.inc({ cause });
  }

  /** Metrics of controller `name`, whose work queue is reported under the same name. */
  controller(name: string, maxConcurrentReconciles: number): ControllerMetrics {
    this.#maxConcurrent.set({ controller: name }, maxConcurrentReconciles);
    this.#activeWorkers.set({ controller: name }, 0);
    const queue = new QueueMetrics(
      this.#depth.labels({ name }),
      this.#adds.labels({ name }),
      this.#queueDuration.labels({ name }),
      this.#workDuration.labels({ name }),
      this.#retries.labels({ name }),
    );
    this.#queues.set(name, queue);
    const labels = { controller: name };
    // As controller-runtime does: every series exists from the start, so a rate over it is never empty.
    for (const result of RECONCILE_OUTCOMES) this.#reconcileTotal.inc({ ...labels, result }, 0);
    this.#reconcileErrors.inc(labels, 0);
    this.#terminalErrors.inc(labels, 0);
    this.#retries.inc({ name }, 0);
    return {
      queue,
      reconcileStarted: () => this.#activeWorkers.inc(labels),
      reconcileFinished: (outcome, seconds, terminal = false) => {
        this.#activeWorkers.dec(labels);
        this.#reconcileTotal.inc({ ...labels, result: outcome });
        if (outcome === 'error') this.#reconcileErrors.inc(labels);
        if (terminal) this.#terminalErrors.inc(labels);
        this.#reconcileTime.observe(labels, seconds);
      },
    };
  }

  /** Reports whether this process holds lease `name`. */
  setLeader(name: string, leading: boolean): void {
    this.#leader.set({ name }, leading ? 1 : 0);
  }
}

type GaugeChild = ReturnType<Gauge<'name'>['labels']>;
type CounterChild = ReturnType<Counter<'name'>['labels']>;
type HistogramChild = ReturnType<Histogram<'name'>['labels']>;

/** Timing of one queue, as client-go's queue metrics keep it. */
class QueueMetrics implements WorkQueueObserver {
  readonly #addedAt = new Map<string, number>();
  readonly #startedAt = new Map<string, number>();
  readonly #depth: GaugeChild;
  readonly #adds: CounterChild;
  readonly #queueDuration: HistogramChild;
  readonly #workDuration: HistogramChild;
  readonly #retries: CounterChild;

  constructor(
    depth: GaugeChild,
    adds: CounterChild,
    queueDuration: HistogramChild,
    workDuration: HistogramChild,
    retries: CounterChild,
  ) {
    this.#depth = depth;
    this.#adds = adds;
    this.#queueDuration = queueDuration;
    this.#workDuration = workDuration;
    this.#retries = retries;
  }

  added(key: string): void {
    this.#depth.inc();
    this.#adds.inc();
    if (!this.#addedAt.has(key)) this.#addedAt.set(key, performance.now());
  }

  started(key: string): void {
    this.#depth.dec();
    const addedAt = this.#addedAt.get(key);
    if (addedAt !== undefined) this.#queueDuration.observe(secondsSince(addedAt));
    this.#addedAt.delete(key);
    this.#startedAt.set(key, performance.now());
  }

  finished(key: string): void {
    const startedAt = this.#startedAt.get(key);
    if (startedAt !== undefined) this.#workDuration.observe(secondsSince(startedAt));
    this.#startedAt.delete(key);
  }

  retried(): void {
    this.#retries.inc();
  }

  unfinishedSeconds(): number {
    let total = 0;
    for (const startedAt of this.#startedAt.values()) total += secondsSince(startedAt);
    return total;
  }

  longestRunningSeconds(): number {
    let longest = 0;
    for (const startedAt of this.#startedAt.values()) longest = Math.max(longest, secondsSince(startedAt));
    return longest;
  }
}

function secondsSince(start: number): number {
  return (performance.now() - start) / 1000;
}
