import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { z } from 'zod';
import { type ManagedObject, OUTCOMES } from './external-kind.ts';

/**
 * What one resource holds and costs now, read from its spec and status (never a cloud call). The cloud
 * quotes prices in US dollars.
 */
export interface Usage {
  /**
   * GPUs running now, and billed (0 unless the phase is RUNNING), and their model: what the fleet gauges
   * show. The guardrails count more: every GPU an object holds (`MeteringSupport.heldGpus`).
   */
  runningGpus: number;
  gpuType?: string | undefined;
  /** Spend rate now, in dollars per hour. */
  dollarsPerHour: number;
  /** Estimated cost so far, in dollars. */
  dollarsSoFar: number;
  /** Endpoints: the workers the spec or its autoscaler wants, and those running. */
  workers?: { desired: number; running: number } | undefined;
  /** QUEUE endpoints: the task counts by status, as the last details read them. */
  tasks?: Readonly<Record<string, number>> | undefined;
}

/** A resource as the informer cache holds it: read at every scrape, so never parsed whole. */
export interface FleetResource {
  readonly metadata: {
    readonly namespace?: string | undefined;
    readonly name?: string | undefined;
    readonly creationTimestamp?: string | undefined;
    readonly deletionTimestamp?: string | undefined;
  };
  readonly spec?: unknown;
  readonly status?: unknown;
}

/** One kind's resources as the fleet gauges read them. */
export interface FleetSource {
  readonly kind: string;
  resources(): Iterable<FleetResource>;
  usage?: ((resource: FleetResource) => Usage) | undefined;
  /** What the kind's reconciler keeps per resource, by memory (`ManagedReconciler.remembered`). */
  remembered?: (() => Record<string, number>) | undefined;
}

/** What the reconciler of one kind reports as it sees it happen. */
export interface KindEvents {
  becameReady(mr: ManagedObject<unknown>): void;
  drifted(): void;
  preempted(): void;
  refused(reason: string): void;
  /** The operator paused an object its user did not pause (idle, deadline, budget). */
  pausedByOperator(reason: string): void;
  /** A deadline passed and its action (Pause, Delete) was taken. */
  deadlineExceeded(action: string): void;
}

// From seconds (a pod the cloud has ready) to an hour (a VM waiting on capacity).
const READY_BUCKETS = [1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1200, 1800, 3600];

/**
 * The fleet as a platform team and its finance partner read it: resources by phase, GPUs by type, spend by
 * namespace, endpoint queues and workers — gauges computed at scrape time from the informer caches, and
 * exported by the leader only, so that `sum()` over replicas does not count twice. Events (time to Ready,
 * drift, preemption, terminal refusals) are counted where they happen, which is on the leader.
 */
export class FleetMetrics {
  readonly #sources: FleetSource[] = [];
  readonly #timeToReady: Histogram<'kind'>;
  readonly #drift: Counter<'kind'>;
  readonly #preemptions: Counter<'kind'>;
  readonly #operatorPauses: Counter<'kind' | 'reason'>;
  readonly #deadlines: Counter<'kind' | 'action'>;
  readonly #terminal: Counter<'kind' | 'reason'>;

  constructor(registry: Registry, isLeader: () => boolean) {
    const registers = [registry];
    const gauge = <L extends string>(
      name: string,
      help: string,
      labelNames: readonly L[],
      fill: (set: (labels: Record<L, string>, value: number) => void) => void,
      combine: (a: number, b: number) => number = (a, b) => a + b,
    ) =>
      new Gauge<L>({
        name,
        help,
        labelNames,
        registers,
        collect() {
          this.reset();
          if (!isLeader()) return;
          const sums = new Map<string, { labels: Record<L, string>; value: number }>();
          fill((labels, value) => {
            const key = JSON.stringify(labels);
            const known = sums.get(key);
            sums.set(key, { labels, value: known ? combine(known.value, value) : value });
          });
          for (const { labels, value } of sums.values()) this.set(labels, value);
        },
      });
    gauge(
      'gpucloud_resources',
      'Managed resources by kind, namespace and phase (the cloud status; Pending before one)',
      ['kind', 'namespace', 'phase'],
      (set) => {
        for (const { kind, mr } of this.#all()) {
          set({ kind, namespace: mr.metadata.namespace ?? '', phase: phaseOf(mr.status) }, 1);
        }
      },
    );
    gauge(
      'gpucloud_remembered_resources',
      "Resources (or cloud objects) each of a kind's in-process memories holds something for: back to the live count once resources go",
      ['kind', 'memory'],
      (set) => {
        for (const source of this.#sources) {
          for (const [memory, count] of Object.entries(source.remembered?.() ?? {}))
            set({ kind: source.kind, memory }, count);
        }
      },
    );
    gauge(
      'gpucloud_gpus_running',
      'GPUs live now, by namespace and GPU model',
      ['namespace', 'gpu_type'],
      (set) => {
        for (const { mr, usage } of this.#used()) {
          if (usage.runningGpus > 0)
            set(
              { namespace: mr.metadata.namespace ?? '', gpu_type: usage.gpuType ?? 'unknown' },
              usage.runningGpus,
            );
        }
      },
    );
    gauge(
      'gpucloud_spend_rate_dollars_per_hour',
      'Spend rate now, in US dollars per hour, by namespace and kind',
      ['namespace', 'kind'],
      (set) => {
        for (const { kind, mr, usage } of this.#used())
          set({ namespace: mr.metadata.namespace ?? '', kind }, usage.dollarsPerHour);
      },
    );
    gauge(
      'gpucloud_estimated_cost_dollars',
      'Estimated cost so far of the resources that exist, in US dollars, by namespace and kind',
      ['namespace', 'kind'],
      (set) => {
        for (const { kind, mr, usage } of this.#used())
          set({ namespace: mr.metadata.namespace ?? '', kind }, usage.dollarsSoFar);
      },
    );
    gauge(
      'gpucloud_endpoint_tasks',
      'Tasks of a QUEUE endpoint by status, as its last details read them',
      ['namespace', 'endpoint', 'status'],
      (set) => {
        for (const { mr, usage } of this.#used()) {
          for (const [status, count] of Object.entries(usage.tasks ?? {})) {
            set({ namespace: mr.metadata.namespace ?? '', endpoint: mr.metadata.name ?? '', status }, count);
          }
        }
      },
    );
    gauge(
      'gpucloud_endpoint_workers',
      'Workers of an endpoint: desired (spec or autoscaler) and running',
      ['namespace', 'endpoint', 'state'],
      (set) => {
        for (const { mr, usage } of this.#used()) {
          if (!usage.workers) continue;
          const at = { namespace: mr.metadata.namespace ?? '', endpoint: mr.metadata.name ?? '' };
          set({ ...at, state: 'desired' }, usage.workers.desired);
          set({ ...at, state: 'running' }, usage.workers.running);
        }
      },
    );
    const now = () => Date.now();
    gauge(
      'gpucloud_deletion_age_seconds',
      'Age of the oldest deletion still waiting on the finalizer, by kind and namespace',
      ['kind', 'namespace'],
      (set) => {
        for (const { kind, mr } of this.#all()) {
          const since = Date.parse(mr.metadata.deletionTimestamp ?? '');
          if (!Number.isNaN(since))
            set({ kind, namespace: mr.metadata.namespace ?? '' }, (now() - since) / 1000);
        }
      },
      Math.max,
    );
    gauge(
      'gpucloud_not_ready_age_seconds',
      'How long the longest-waiting resource has not been Ready, by kind and namespace (finished tasks and deletions left out)',
      ['kind', 'namespace'],
      (set) => {
        for (const { kind, mr } of this.#all()) {
          const since = notReadySince(mr);
          if (since !== undefined)
            set({ kind, namespace: mr.metadata.namespace ?? '' }, (now() - since) / 1000);
        }
      },
      Math.max,
    );
    this.#timeToReady = new Histogram({
      name: 'gpucloud_time_to_ready_seconds',
      help: 'Time from the creation of a resource to its first Ready=True, by kind',
      labelNames: ['kind'],
      buckets: READY_BUCKETS,
      registers,
    });
    this.#drift = new Counter({
      name: 'gpucloud_drift_detections_total',
      help: 'Times a resource was found drifted in fields the cloud cannot change, by kind',
      labelNames: ['kind'],
      registers,
    });
    this.#preemptions = new Counter({
      name: 'gpucloud_preemptions_total',
      help: 'Spot capacity the cloud took back, by kind',
      labelNames: ['kind'],
      registers,
    });
    this.#operatorPauses = new Counter({
      name: 'gpucloud_operator_pauses_total',
      help: 'Objects the operator paused though their spec did not ask it, by kind and reason (Idle, DeadlineExceeded, BudgetExceeded)',
      labelNames: ['kind', 'reason'],
      registers,
    });
    this.#deadlines = new Counter({
      name: 'gpucloud_deadlines_exceeded_total',
      help: 'Resources whose activeDeadlineSeconds passed, by kind and the action taken (Pause, Delete)',
      labelNames: ['kind', 'action'],
      registers,
    });
    this.#terminal = new Counter({
      name: 'gpucloud_terminal_failures_total',
      help: 'Failures retrying cannot fix, by kind and reason',
      labelNames: ['kind', 'reason'],
      registers,
    });
  }

  /** Adds a kind's resources to the fleet gauges; answers what its reconciler reports. */
  add(source: FleetSource): KindEvents {
    this.#sources.push(source);
    const { kind } = source;
    return {
      becameReady: (mr) => {
        const created = Date.parse(mr.metadata.creationTimestamp ?? '');
        if (!Number.isNaN(created))
          this.#timeToReady.observe({ kind }, Math.max(0, (Date.now() - created) / 1000));
      },
      drifted: () => this.#drift.inc({ kind }),
      preempted: () => this.#preemptions.inc({ kind }),
      pausedByOperator: (reason) => this.#operatorPauses.inc({ kind, reason }),
      deadlineExceeded: (action) => this.#deadlines.inc({ kind, action }),
      refused: (reason) => this.#terminal.inc({ kind, reason }),
    };
  }

  *#all(): Iterable<{ kind: string; mr: FleetResource; usage: Usage | undefined }> {
    for (const source of this.#sources) {
      for (const mr of source.resources()) yield { kind: source.kind, mr, usage: source.usage?.(mr) };
    }
  }

  *#used(): Iterable<{ kind: string; mr: FleetResource; usage: Usage }> {
    for (const entry of this.#all()) if (entry.usage) yield { ...entry, usage: entry.usage };
  }
}

/** The cloud's status of the resource, or Pending before the operator wrote one. */
function phaseOf(status: unknown): string {
  if (typeof status !== 'object' || status === null || !('phase' in status)) return 'Pending';
  return typeof status.phase === 'string' ? status.phase : 'Pending';
}

const conditionsView = z.object({
  conditions: z.array(
    z.looseObject({ type: z.string(), status: z.string(), lastTransitionTime: z.string().optional() }),
  ),
});

/** Since when (epoch ms) a live, unfinished resource has not been Ready; undefined when it is, or is done. */
function notReadySince(mr: FleetResource): number | undefined {
  if (mr.metadata.deletionTimestamp) return undefined;
  const conditions = conditionsView.safeParse(mr.status).data?.conditions ?? [];
  const holds = (type: string) => conditions.some((c) => c.type === type && c.status === 'True');
  if (holds('Ready') || OUTCOMES.some(holds)) return undefined;
  const ready = conditions.find((c) => c.type === 'Ready');
  const since = Date.parse(ready?.lastTransitionTime ?? mr.metadata.creationTimestamp ?? '');
  return Number.isNaN(since) ? undefined : since;
}
