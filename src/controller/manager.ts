import { Registry } from 'prom-client';
import { KubeClient } from '../kube/client.ts';
import type { KubeConnection } from '../kube/connection.ts';
import { EventRecorder } from '../kube/event-recorder.ts';
import { Informer, type InformerOptions } from '../kube/informer.ts';
import type { KubeObject, ObjectKey } from '../kube/object.ts';
import { settlesWithin } from '../lib/delay.ts';
import type { Logger } from '../lib/logger.ts';
import { Controller, type ControllerOptions } from './controller.ts';
import { type HealthCheck, HealthServer } from './health-server.ts';
import { type ElectionEnd, LeaderElector } from './leader-election.ts';
import { RuntimeMetrics } from './metrics.ts';

export interface ManagerLeaderElection {
  readonly lease: ObjectKey;
  readonly identity?: string;
  readonly leaseDurationMs?: number;
  readonly renewDeadlineMs?: number;
  readonly retryPeriodMs?: number;
}

export interface ManagerOptions {
  /** Names the operator: event source component and default lease holder prefix. */
  readonly name: string;
  /** The apiserver and credentials: `loadKubeConnection()` from src/kube/connection.ts. */
  readonly connection: KubeConnection;
  readonly logger: Logger;
  /** Where metrics go; a fresh registry when absent. */
  readonly registry?: Registry;
  /** Run controllers only while holding this Lease; always run them when absent. */
  readonly leaderElection?: ManagerLeaderElection;
  /** Serve /healthz, /readyz and /metrics; no server when absent. */
  readonly health?: { readonly port: number; readonly host?: string; readonly maxEventLoopDelayMs?: number };
  /** Bound on a graceful shutdown: in-flight reconciles, lease release, pending events. */
  readonly shutdownTimeoutMs?: number;
}

/** Leadership ended without being asked to: the process should exit and let the pod restart. */
export class LeadershipLostError extends Error {
  constructor(lease: ObjectKey) {
    super(`lost leadership of lease ${lease.namespace}/${lease.name}; controllers stopped`);
    this.name = 'LeadershipLostError';
  }
}

type ControllerSpec = Omit<ControllerOptions, 'logger' | 'metrics'>;

/**
 * Owns the informers, controllers, leader election, event recorder and health server of one
 * operator process (controller-runtime's Manager). Informers run on every replica so a standby has
 * warm caches; controllers run only on the leader, and only once the caches are synced.
 *
 * `run(signal)` resolves after a graceful shutdown (signal aborted): no new work, in-flight
 * reconciles finish (bounded), pending events are written, the lease is released, servers close.
 * It rejects with `LeadershipLostError` when the lease is lost: controllers are aborted at once.
 */
export class Manager {
  readonly client: KubeClient;
  readonly registry: Registry;
  readonly metrics: RuntimeMetrics;
  readonly events: EventRecorder;
  readonly #options: ManagerOptions;
  readonly #log: Logger;
  readonly #informers = new Map<string, Informer<KubeObject>>();
  readonly #controllers: Controller[] = [];
  readonly #leaderTasks: Array<(leading: AbortSignal) => Promise<void>> = [];
  readonly #runningTasks = new Set<Promise<void>>();
  readonly #health: HealthServer | undefined;
  #running = false;
  #elector: LeaderElector | undefined;

  constructor(options: ManagerOptions) {
    this.#options = options;
    this.#log = options.logger;
    this.client = new KubeClient(options.connection);
    this.registry = options.registry ?? new Registry();
    this.metrics = new RuntimeMetrics(this.registry);
    this.events = new EventRecorder({
      client: this.client,
      component: options.name,
      logger: options.logger,
      onDropped: (cause) => this.metrics.eventDropped(cause),
    });
    if (options.health) {
      this.#health = new HealthServer({ ...options.health, registry: this.registry, logger: options.logger });
      this.#health.addReadyCheck('informers-synced', () => this.#unsyncedInformers());
    }
  }

  /** The port of the health server (after `run` started it); 0 without one. */
  get healthPort(): number {
    return this.#health?.port ?? 0;
  }

  /**
   * The informer for this resource and scope, shared by every caller asking for the same one.
   * Options beyond resource, namespace and selectors are taken from the first request.
   */
  informer<T extends KubeObject = KubeObject>(options: InformerOptions): Informer<T> {
    const { resource, namespace, labelSelector, fieldSelector } = options;
    const key = JSON.stringify([resource.group, resource.plural, namespace, labelSelector, fieldSelector]);
    let informer = this.#informers.get(key);
    if (!informer) {
      informer = new Informer<KubeObject>(this.client, options, this.#log);
      this.#informers.set(key, informer);
      if (this.#running) informer.start();
    }
    // One informer per resource serves one kind of object, whatever type each caller names it by.
    return informer as unknown as Informer<T>;
  }

  addController(spec: ControllerSpec): Controller {
    if (this.#running) throw new Error(`add controller ${spec.name} before the manager runs`);
    const metrics = this.metrics.controller(spec.name, spec.maxConcurrentReconciles ?? 1);
    const controller = new Controller({ ...spec, logger: this.#log, metrics });
    this.#controllers.push(controller);
    return controller;
  }

  /**
   * Runs `task` each time this process starts leading (at once without leader election), once the caches
   * are synced; `leading` aborts when leadership or the process ends, and shutdown waits for the task.
   */
  whileLeading(task: (leading: AbortSignal) => Promise<void>): void {
    this.#leaderTasks.push(task);
  }

  /**
   * Whether this process may change the outside world right now: always without leader election; with
   * it, only while the lease is certainly its own (`LeaderElector.isLeader`).
   */
  mayAct(): boolean {
    return this.#options.leaderElection === undefined || (this.#elector?.isLeader() ?? false);
  }

  addReadyCheck(name: string, check: HealthCheck): void {
    this.#health?.addReadyCheck(name, check);
  }

  addHealthCheck(name: string, check: HealthCheck): void {
    this.#health?.addHealthCheck(name, check);
  }

  async run(signal: AbortSignal): Promise<void> {
    if (this.#running) throw new Error('the manager is already running');
    this.#running = true;
    await this.#health?.start();
    for (const informer of this.#informers.values()) informer.start();
    const election = this.#options.leaderElection;
    const end = election ? await this.#runElected(election, signal) : await this.#runUnelected(signal);
    if (end === 'lost' && election) throw new LeadershipLostError(election.lease);
  }

  async #runUnelected(signal: AbortSignal): Promise<ElectionEnd> {
    await this.#startControllersWhenSynced(signal);
    await aborted(signal);
    await this.#shutdown(Date.now() + this.#shutdownTimeoutMs());
    return 'released';
  }

  async #runElected(election: ManagerLeaderElection, signal: AbortSignal): Promise<ElectionEnd> {
    const release = new AbortController();
    const leaseName = election.lease.name;
    const elector = new LeaderElector({
      ...election,
      client: this.client,
      logger: this.#log,
      onStartedLeading: (leading) => {
        this.metrics.setLeader(leaseName, true);
        // Losing the lease stops every reconcile at once; a graceful stop drains first (below).
        leading.addEventListener('abort', () => {
          if (!release.signal.aborted) void this.#stopControllers(0);
        });
        void this.#startControllersWhenSynced(AbortSignal.any([leading, signal]));
      },
      onStoppedLeading: () => this.metrics.setLeader(leaseName, false),
    });
    this.#elector = elector;
    this.metrics.setLeader(leaseName, false);
    const running = elector.run(release.signal);
    const end = await Promise.race([running, aborted(signal).then(() => undefined)]);
    const deadline = Date.now() + this.#shutdownTimeoutMs();
    // Release only after in-flight reconciles are done, so a successor never overlaps with them.
    await this.#shutdown(deadline, async () => {
      release.abort();
      await settlesWithin(running, remaining(deadline));
    });
    return end ?? (await running);
  }

  async #startControllersWhenSynced(signal: AbortSignal): Promise<void> {
    const informers = [...this.#informers.values()];
    const synced = await Promise.all(informers.map((informer) => informer.waitForSync(signal)));
    if (signal.aborted || !synced.every(Boolean)) return;
    for (const controller of this.#controllers) controller.start();
    for (const task of this.#leaderTasks) {
      const running = task(signal).catch((error: unknown) =>
        this.#log.error({ err: error }, 'leader task failed'),
      );
      this.#runningTasks.add(running);
      void running.finally(() => this.#runningTasks.delete(running));
    }
  }

  /** `afterDrain` runs once no reconcile is in flight any more (or the grace period is over). */
  async #shutdown(deadline: number, afterDrain?: () => Promise<void>): Promise<void> {
    this.#log.info('shutting down: finishing in-flight reconciles');
    await this.#stopControllers(remaining(deadline));
    await settlesWithin(Promise.all(this.#runningTasks), remaining(deadline));
    await afterDrain?.();
    await settlesWithin(this.events.flush(), remaining(deadline));
    await Promise.all([...this.#informers.values()].map((informer) => informer.stop()));
    await this.#health?.stop();
    this.#log.info('shutdown complete');
  }

  async #stopControllers(graceMs: number): Promise<void> {
    await Promise.all(this.#controllers.map((controller) => controller.stop(graceMs)));
  }

  #unsyncedInformers(): true | string {
    const waiting = [...this.#informers.values()].filter((informer) => !informer.hasSynced());
    return (
      waiting.length === 0 || `not synced: ${waiting.map((informer) => informer.resource.plural).join(', ')}`
    );
  }

  #shutdownTimeoutMs(): number {
    return this.#options.shutdownTimeoutMs ?? 30_000;
  }
}

function remaining(deadline: number): number {
  return Math.max(0, deadline - Date.now());
}

function aborted(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
}
