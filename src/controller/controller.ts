import { keyFromString, keyToString, type ObjectKey } from '../kube/object.ts';
import { settlesWithin } from '../lib/delay.ts';
import { type Logger, reconcileLogger } from '../lib/logger.ts';
import type { ControllerMetrics, ReconcileOutcome } from './metrics.ts';
import type { RateLimiter } from './queue-rate-limiters.ts';
import type { Enqueue, EventSource } from './source.ts';
import { WorkQueue } from './work-queue.ts';

/**
 * What a reconcile asks for next. Nothing: done until something changes. `requeueAfterMs`: look
 * again then (polling). `requeue`: again soon, rate limited, without counting as an error. `deferred`:
 * nothing was done, and an event on its way brings the key back (the cache has not shown this process's
 * own last write yet); the key's backoff is kept as it was, neither forgotten nor counted.
 */
export interface Result {
  readonly requeueAfterMs?: number;
  readonly requeue?: boolean;
  readonly deferred?: boolean;
}

export interface ReconcileContext {
  /** Aborts when the controller must stop at once (leadership lost, shutdown grace over). */
  readonly signal: AbortSignal;
  /** Carries `controller`, `namespace`, `name` and a `reconcileID` on every line. */
  readonly log: Logger;
}

/** Resolving with nothing (`undefined`) means done, like an empty `Result`. */
export type Reconciler = (key: ObjectKey, context: ReconcileContext) => Promise<Result | undefined>;

/** Thrown by a reconciler for a failure that retrying cannot fix: logged, counted, not requeued. */
export class TerminalError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'TerminalError';
  }
}

export interface ControllerOptions {
  /** Names the controller in logs and metrics (and its work queue). */
  readonly name: string;
  /** What to watch: usually `objectsOf(primary)` plus `mappedFrom(secondary, ...)`. */
  readonly sources: readonly EventSource[];
  readonly reconcile: Reconciler;
  readonly maxConcurrentReconciles?: number;
  /** Delay of failed keys; controller-runtime's default when absent. */
  readonly rateLimiter?: RateLimiter;
  readonly logger: Logger;
  readonly metrics: ControllerMetrics;
}

/**
 * Feeds keys from its sources into a work queue and runs the reconciler on them with a bounded
 * number of workers, never two at once for one key. A reconciler that throws (or rejects) never
 * takes the process down: the key is retried with per-key exponential backoff.
 */
export class Controller {
  readonly name: string;
  readonly #options: ControllerOptions;
  readonly #log: Logger;
  readonly #queue: WorkQueue;
  readonly #abort = new AbortController();
  #state: 'new' | 'running' | 'stopped' = 'new';
  #unsubscribe: (() => void)[] = [];
  #workers: Promise<void>[] = [];

  constructor(options: ControllerOptions) {
    this.name = options.name;
    this.#options = options;
    this.#log = options.logger.child({ controller: options.name });
    this.#queue = new WorkQueue({ rateLimiter: options.rateLimiter, observer: options.metrics.queue });
  }

  /** Whether every source has its cache filled; start only after this (the manager waits). */
  hasSynced(): boolean {
    return this.#options.sources.every((source) => source.hasSynced());
  }

  start(): void {
    if (this.#state !== 'new') throw new Error(`controller ${this.name} can be started only once`);
    this.#state = 'running';
    const enqueue: Enqueue = (key, arrival) => this.#queue.add(keyToString(key), arrival);
    this.#unsubscribe = this.#options.sources.map((source) => source.start(enqueue));
    const workers = this.#options.maxConcurrentReconciles ?? 1;
    this.#workers = Array.from({ length: workers }, () => this.#work());
    this.#log.info({ workers }, 'controller started');
  }

  /**
   * Stops taking work. Reconciles in progress get `graceMs` to finish; then their signal aborts
   * and this resolves (they are not awaited further: reconcilers must honour the signal).
   */
  async stop(graceMs: number): Promise<void> {
    if (this.#state === 'stopped') return;
    this.#state = 'stopped';
    for (const unsubscribe of this.#unsubscribe) unsubscribe();
    if (graceMs <= 0) this.#abort.abort();
    const drained = await settlesWithin(this.#queue.shutdownWithDrain(), graceMs);
    if (!drained)
      this.#log.warn({ graceMs }, 'reconciles still running after the grace period; aborting them');
    this.#abort.abort();
    if (drained) await Promise.all(this.#workers);
    this.#log.info('controller stopped');
  }

  async #work(): Promise<void> {
    for (let key = await this.#queue.get(); key !== undefined; key = await this.#queue.get()) {
      try {
        await this.#reconcile(key);
      } finally {
        this.#queue.done(key);
      }
    }
  }

  async #reconcile(key: string): Promise<void> {
    const objectKey = keyFromString(key);
    const controllerLog = this.#log;
    let log: Logger | undefined;
    const ctx: ReconcileContext = {
      signal: this.#abort.signal,
      // Made on first use: a child logger serialises its bindings when made, and most reconciles log nothing.
      get log() {
        log ??= reconcileLogger(controllerLog, objectKey);
        return log;
      },
    };
    const metrics = this.#options.metrics;
    metrics.reconcileStarted();
    const startedAt = performance.now();
    let outcome: ReconcileOutcome;
    let terminal = false;
    try {
      const result = await this.#options.reconcile(objectKey, ctx);
      outcome = this.#succeeded(key, result);
    } catch (err) {
      terminal = err instanceof TerminalError;
      outcome = this.#failed(key, err, ctx.log);
    }
    metrics.reconcileFinished(outcome, (performance.now() - startedAt) / 1000, terminal);
    // One line a turn at debug level, as controller-runtime's "Reconcile successful": what a resource's
    // reconciles came to, counted where the metric only counts the controller's. Made only when wanted.
    if (controllerLog.isLevelEnabled('debug'))
      ctx.log.debug({ result: outcome, terminal }, 'reconcile finished');
  }

  #succeeded(key: string, result: Result | undefined): ReconcileOutcome {
    if (result?.requeueAfterMs !== undefined && result.requeueAfterMs > 0) {
      this.#queue.forget(key);
      this.#queue.addAfter(key, result.requeueAfterMs);
      return 'requeue_after';
    }
    if (result?.requeue) {
      this.#queue.addRateLimited(key);
      return 'requeue';
    }
    // A failing key's turn put off must not start its backoff over: the retry after it would come at once.
    if (result?.deferred) return 'success';
    this.#queue.forget(key);
    return 'success';
  }

  #failed(key: string, err: unknown, log: Logger): ReconcileOutcome {
    if (this.#abort.signal.aborted) {
      log.info({ err }, 'reconcile interrupted by shutdown');
    } else if (err instanceof TerminalError) {
      log.error({ err }, 'reconcile failed with a terminal error; not retrying until the object changes');
      this.#queue.forget(key);
    } else {
      log.error({ err, retries: this.#queue.retries(key) }, 'reconcile failed; retrying with backoff');
      this.#queue.addRateLimited(key);
    }
    return 'error';
  }
}
