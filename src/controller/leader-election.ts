import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { KubeClient } from '../kube/client.ts';
import { type LeaderRecord, LeaseLock, type ObservedLease } from '../kube/lease-lock.ts';
import type { ObjectKey } from '../kube/object.ts';
import { sleep } from '../lib/delay.ts';
import type { Logger } from '../lib/logger.ts';

export interface LeaderElectionOptions {
  readonly client: KubeClient;
  /** The Lease to hold, e.g. `{ namespace: 'gpucloud-system', name: 'gpucloud-operator' }`. */
  readonly lease: ObjectKey;
  /** Unique per process; defaults to `<hostname>_<uuid>` (the hostname is the pod name in a pod). */
  readonly identity?: string;
  /** How long a lease, once seen renewed, is respected by other candidates. client-go: 15 s. */
  readonly leaseDurationMs?: number;
  /** How long the leader keeps trying to renew before it gives up leading. client-go: 10 s. */
  readonly renewDeadlineMs?: number;
  /** Pause between attempts to acquire or renew. client-go: 2 s. */
  readonly retryPeriodMs?: number;
  readonly logger: Logger;
  /** Leading begins; `signal` aborts the moment leading ends, for whatever reason. */
  readonly onStartedLeading: (signal: AbortSignal) => void;
  readonly onStoppedLeading?: () => void;
  /** Another (or this) identity was seen holding the lease. */
  readonly onNewLeader?: (identity: string) => void;
}

/** How a `run` ended: leadership lost, handed back on request, or never obtained before the request. */
export type ElectionEnd = 'lost' | 'released' | 'cancelled';

const JITTER = 1.2;

/**
 * client-go's leader election on a Lease. Candidates retry within `retryPeriodMs`; a lease counts
 * as held while `leaseDuration` has not passed since this process last saw it change (local time,
 * so clock skew between nodes does not matter). The leader renews every `retryPeriodMs`.
 *
 * Leading ends at once, with `signal` aborted, when a renewal shows another holder or when no
 * renewal succeeded for `renewDeadlineMs`. On a requested stop the leader releases the lease so
 * that a successor takes over without waiting for it to expire.
 */
export class LeaderElector {
  readonly identity: string;
  readonly #options: LeaderElectionOptions;
  readonly #lock: LeaseLock;
  readonly #log: Logger;
  readonly #leaseDurationMs: number;
  readonly #renewDeadlineMs: number;
  readonly #retryPeriodMs: number;
  #observed: ObservedLease | undefined;
  #observedAt = 0;
  #leading = false;
  // Epoch ms until which the lease is certainly this process's: the renew deadline after the start of
  // the last successful acquire or renew. No other candidate can take over before it.
  #certainUntil = 0;

  constructor(options: LeaderElectionOptions) {
    this.#options = options;
    this.identity = options.identity ?? `${hostname()}_${randomUUID()}`;
    this.#leaseDurationMs = options.leaseDurationMs ?? 15_000;
    this.#renewDeadlineMs = options.renewDeadlineMs ?? 10_000;
    this.#retryPeriodMs = options.retryPeriodMs ?? 2_000;
    if (
      !(this.#leaseDurationMs > this.#renewDeadlineMs && this.#renewDeadlineMs > JITTER * this.#retryPeriodMs)
    ) {
      throw new RangeError(
        'leader election needs leaseDuration > renewDeadline > 1.2 × retryPeriod ' +
          `(got ${this.#leaseDurationMs} ms, ${this.#renewDeadlineMs} ms, ${this.#retryPeriodMs} ms)`,
      );
    }
    this.#lock = new LeaseLock(options.client, options.lease);
    this.#log = options.logger.child({
      lease: `${options.lease.namespace}/${options.lease.name}`,
      identity: this.identity,
    });
  }

  /**
   * Whether this process leads and the lease is certainly still its own, read from the clock: a process
   * frozen past its renew deadline (a stopped VM, a long pause) answers false the moment it resumes,
   * before its renew loop has run and noticed.
   */
  isLeader(): boolean {
    return this.#leading && Date.now() < this.#certainUntil;
  }

  /**
   * Campaigns until leading, then leads until the lease is lost or `signal` aborts (the lease is
   * then released). Never throws: apiserver failures are retried within the rules above.
   */
  async run(signal: AbortSignal): Promise<ElectionEnd> {
    if (!(await this.#acquire(signal))) return 'cancelled';
    const leading = new AbortController();
    this.#leading = true;
    this.#log.info('became leader');
    this.#notify(() => this.#options.onStartedLeading(leading.signal));
    const end = await this.#renew(signal);
    this.#leading = false;
    leading.abort();
    if (end === 'released') await this.#release();
    else this.#log.error('leadership lost; stopping');
    this.#notify(() => this.#options.onStoppedLeading?.());
    return end;
  }

  async #acquire(signal: AbortSignal): Promise<boolean> {
    this.#log.info('campaigning for leadership');
    while (!signal.aborted) {
      if ((await this.#tryAcquireOrRenew(Date.now() + this.#renewDeadlineMs)) === 'acquired') return true;
      await sleep(this.#untilNextAttemptMs(), signal);
    }
    return false;
  }

  /**
   * A candidate looks again within one retry period (jittered below it, so candidates drift apart),
   * and at the instant the lease it saw held would expire: it sees the holder's last renewal at most
   * one retry period late, so it takes over within the lease duration plus one retry period of that
   * renewal. client-go waits a jittered period past the expiry instead, up to 2.2 retry periods.
   */
  #untilNextAttemptMs(): number {
    const period = this.#retryPeriodMs * (1 - Math.random() * (1 - 1 / JITTER));
    const holder = this.#observed?.record;
    if (!holder || holder.holderIdentity === '' || holder.holderIdentity === this.identity) return period;
    const expiresInMs = this.#observedAt + holder.leaseDurationSeconds * 1000 - Date.now();
    return expiresInMs > 0 ? Math.min(period, expiresInMs + 1) : period;
  }

  async #renew(signal: AbortSignal): Promise<ElectionEnd> {
    // Leading ends when the lease is no longer certain (each success moves that instant on); requests
    // are cut off at it too.
    while (!signal.aborted) {
      await sleep(Math.min(this.#retryPeriodMs, Math.max(0, this.#certainUntil - Date.now())), signal);
      if (signal.aborted) break;
      if (Date.now() >= this.#certainUntil) {
        this.#log.error(
          { renewDeadlineMs: this.#renewDeadlineMs },
          'could not renew the lease within the deadline',
        );
        return 'lost';
      }
      const outcome = await this.#tryAcquireOrRenew(this.#certainUntil);
      if (outcome === 'held-by-other') return 'lost';
    }
    return 'released';
  }

  /** One attempt, every request of which is cut off at `deadline` (epoch milliseconds). */
  async #tryAcquireOrRenew(deadline: number): Promise<'acquired' | 'held-by-other' | 'failed'> {
    const timeoutMs = () => Math.max(1, deadline - Date.now());
    try {
      const now = new Date();
      const current = await this.#lock.get(timeoutMs());
      if (!current) {
        this.#remember(await this.#lock.create(this.#recordAt(now, undefined), timeoutMs()));
        return this.#heldFrom(now);
      }
      this.#remember(current);
      const holder = current.record.holderIdentity;
      if (
        holder !== '' &&
        holder !== this.identity &&
        this.#observedAt + current.record.leaseDurationSeconds * 1000 > Date.now()
      ) {
        return 'held-by-other';
      }
      this.#remember(
        await this.#lock.update(current.lease, this.#recordAt(now, current.record), timeoutMs()),
      );
      return this.#heldFrom(now);
    } catch (err) {
      this.#log.warn({ err }, 'could not acquire or renew the lease');
      return 'failed';
    }
  }

  /** The lease was written with renewTime `now`: others count its duration from no earlier than that. */
  #heldFrom(now: Date): 'acquired' {
    this.#certainUntil = now.getTime() + this.#renewDeadlineMs;
    return 'acquired';
  }

  #recordAt(now: Date, previous: LeaderRecord | undefined): LeaderRecord {
    const mine = previous?.holderIdentity === this.identity;
    return {
      holderIdentity: this.identity,
      leaseDurationSeconds: Math.ceil(this.#leaseDurationMs / 1000),
      acquireTime: mine && previous ? previous.acquireTime : now,
      renewTime: now,
      leaseTransitions: previous === undefined ? 0 : previous.leaseTransitions + (mine ? 0 : 1),
    };
  }

  /** Keeps the latest lease and the local time it was first seen in this version. */
  #remember(observed: ObservedLease): void {
    const version = observed.lease.metadata.resourceVersion;
    if (version !== undefined && version === this.#observed?.lease.metadata.resourceVersion) return;
    const previousHolder = this.#observed?.record.holderIdentity;
    this.#observed = observed;
    this.#observedAt = Date.now();
    const holder = observed.record.holderIdentity;
    if (holder !== '' && holder !== previousHolder) this.#notify(() => this.#options.onNewLeader?.(holder));
  }

  /** Hands the lease back (empty holder) if this process still holds it. */
  async #release(): Promise<void> {
    const observed = this.#observed;
    if (!observed || observed.record.holderIdentity !== this.identity) return;
    const now = new Date();
    const released: LeaderRecord = {
      holderIdentity: '',
      leaseDurationSeconds: 1,
      acquireTime: now,
      renewTime: now,
      leaseTransitions: observed.record.leaseTransitions,
    };
    try {
      this.#remember(await this.#lock.update(observed.lease, released, this.#renewDeadlineMs));
      this.#log.info('lease released');
    } catch (err) {
      this.#log.warn({ err }, 'could not release the lease; a successor waits for it to expire');
    }
  }

  #notify(callback: () => void): void {
    try {
      callback();
    } catch (err) {
      this.#log.error({ err }, 'leader election callback threw');
    }
  }
}
