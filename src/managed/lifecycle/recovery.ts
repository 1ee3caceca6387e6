import type { Logger } from 'pino';
import type { Result } from '../../controller/controller.ts';
import type { Clock } from '../../lib/clock.ts';
import type { AccountLink } from '../accounts/account-links.ts';
import { EXTERNAL_ID } from '../core/annotations.ts';
import { type ConditionInput, readyReason } from '../core/conditions.ts';
import { ReconcileError } from '../core/errors.ts';
import type { EventSink } from '../core/event-sink.ts';
import type { CommonSpec, ExternalKind, ManagedObject, Plan } from '../core/external-kind.ts';
import type { KindEvents } from '../core/fleet-metrics.ts';
import { allows } from '../core/policies.ts';
import { logResource } from '../core/resource-log.ts';
import type { StatusContributor } from '../core/status-contribution.ts';
import type { ManagedStatus } from '../core/status-schema.ts';
import { statusAsIs, writeStatus } from '../core/status-write.ts';
import type { ManagedWriter } from '../core/writer.ts';
import { ABOVE_CAP, FAILED_TO_START, withLoss } from '../creation/placement.ts';
import { forgetCloud } from '../identity/cloud-view.ts';
import { expireFinished } from './time-to-live.ts';

/**
 * Why a resource's object is lost while it lives: the cloud took spot back, it never started, or the
 * cloud charges it above the resource's cap.
 */
export type LostObject = 'Preempted' | 'FailedToStart' | 'AboveCap';

/** The Ready reason of a preempted resource: also how a preemption is known to be counted already. */
export const PREEMPTED = 'Preempted';
/** The Ready reasons of an object the operator deleted to replace it, and what befell it. */
const REPLACED: Record<string, string> = {
  [PREEMPTED]: 'was preempted',
  [FAILED_TO_START]: 'failed to start',
  [ABOVE_CAP]: 'was charged above its cap',
};

/** Backoff before a preempted resource's replacement: doubling from the first, up to the cap. */
const RECREATE_BACKOFF_MS = { first: 10_000, max: 300_000 };

export interface RecoveryOptions {
  /** The kind's name, for messages. */
  kind: string;
  writer: ManagedWriter;
  events: EventSink;
  fleet: Pick<KindEvents, 'preempted'>;
  clock: Clock;
  log: Logger;
}

/**
 * What happens when the object a resource holds is lost while the resource lives: preempted (spot), so
 * replaced after a backoff or left down; deleted behind the operator's back, so made again; or, for a
 * finite kind, gone before it finished, so failed for good. Crash-safe creation itself is `Creation`.
 */
export class Recovery<Spec extends CommonSpec, Cloud> {
  readonly #o: RecoveryOptions;

  constructor(options: RecoveryOptions) {
    this.#o = options;
  }

  /** A preempted object: deleted first when it is to be replaced, so two never live for one resource. */
  planAfterPreemption(mr: ManagedObject<Spec>, cloud: Cloud, link: AccountLink<Spec, Cloud>): Plan {
    const remove = link.adapter.delete;
    if (!remove || !recreates(mr)) return { kind: 'in-sync' };
    const id = link.adapter.idOf(cloud);
    return {
      kind: 'act',
      step: {
        reason: 'Recovering',
        describe: `deleting preempted ${this.#o.kind} ${id} before creating its replacement`,
        run: () => remove(id),
      },
    };
  }

  /**
   * A placed object that failed before it ran, or that the cloud charges above the cap: deleted, so that
   * the resource is placed again on another offer (whatever its recoveryPolicy), when the policies allow both.
   */
  planReplacement(
    mr: ManagedObject<Spec>,
    cloud: Cloud,
    link: AccountLink<Spec, Cloud>,
    lost: Exclude<LostObject, 'Preempted'>,
  ): Plan {
    const remove = link.adapter.delete;
    const policies = mr.spec.managementPolicies;
    if (!remove || !allows(policies, 'Create') || !allows(policies, 'Delete')) return { kind: 'in-sync' };
    const id = link.adapter.idOf(cloud);
    return {
      kind: 'act',
      step: {
        reason: 'Recovering',
        describe: `deleting ${this.#o.kind} ${id}, ${lost === ABOVE_CAP ? 'charged above maxPricePerGpuHour' : 'which failed before it ran'}, to place it again`,
        run: () => remove(id),
      },
    };
  }

  /** The cloud object is gone although the custom resource lives. */
  async onMissing(mr: ManagedObject<Spec>, id: string, link: AccountLink<Spec, Cloud>): Promise<Result> {
    const { kind } = this.#o;
    if (mr.status?.id !== id) {
      throw new ReconcileError(
        'ExternalResourceNotFound',
        `the cloud has no live ${kind} with id ${id}, named by annotation ${EXTERNAL_ID}; fix or remove the annotation`,
        { terminal: true },
      );
    }
    if (link.adapter.finite) return this.#lose(mr, id);
    // A spot object gone without the operator asking was taken back, unless that was already seen (it
    // FAILED first, and recovery deleted it).
    const spot = link.adapter.spot?.requested(mr.spec) === true;
    const creates = allows(mr.spec.managementPolicies, 'Create');
    const gone = new ReconcileError(
      'ExternalResourceGone',
      `${kind} ${id} is gone from the cloud; managementPolicies do not include Create, so no replacement is made`,
      { terminal: true },
    );
    if (spot && readyReason(mr.status) !== PREEMPTED) {
      // Without Create, the refusal goes in the same status write as the preemption: a failure written
      // after it, from the status as read, would drop the count.
      const refusal = creates ? undefined : gone;
      await this.#recordPreemption(
        mr,
        `spot ${kind} ${id} is gone from the cloud without the operator asking`,
        refusal,
      );
      if (refusal) return {};
    }
    if (!creates) throw gone;
    if (spot && !recreates(mr)) return {};
    // It existed and was deleted behind our back, or by us after it failed to start: the spec still asks
    // for it, so make a new one. Only from the copy as it is: one from before the turn that deleted it
    // (an informer behind) has no word of why, and would call the operator's own delete a surprise.
    await this.#o.writer.patchObject(mr, { annotations: { [EXTERNAL_ID]: null }, ifUnchanged: true });
    forgetCloud(id, link);
    // Deleted by the operator itself, to be replaced: said when it was lost, not again as a surprise.
    const why = REPLACED[readyReason(mr.status) ?? ''];
    if (why !== undefined) {
      logResource(
        this.#o.log,
        'info',
        mr,
        { id },
        `${kind} ${id} ${why} and is deleted; making its replacement`,
      );
      return { requeue: true };
    }
    const message = `${kind} ${id} is gone from the cloud; creating a replacement`;
    this.#o.events.event(mr, 'Warning', 'ExternalResourceGone', message);
    logResource(this.#o.log, 'warn', mr, { id }, message);
    return { requeue: true };
  }

  /** A finite object gone before it finished (its endpoint deleted): failed, and never made again. */
  async #lose(mr: ManagedObject<Spec>, id: string): Promise<Result> {
    const message = `${this.#o.kind} ${id} is gone from the cloud before it finished; it is not made again`;
    this.#o.events.event(mr, 'Warning', 'Lost', message);
    logResource(this.#o.log, 'warn', mr, { id }, message);
    const completionTime = new Date(this.#o.clock.now()).toISOString();
    const written = await writeStatus(this.#o, mr, { ...statusAsIs(mr.status), completionTime }, [
      { type: 'Ready', status: 'False', reason: 'Lost', message },
      { type: 'Failed', status: 'True', reason: 'Lost', message },
    ]);
    return expireFinished(this.#o, written, Date.parse(completionTime));
  }

  /** Counts a preemption in status, with its Warning event; the Ready reason marks it counted. */
  async #recordPreemption(mr: ManagedObject<Spec>, what: string, refusal?: ReconcileError): Promise<void> {
    const message = `${what}; ${recreates(mr) ? 'creating a replacement (recoveryPolicy Recreate)' : 'recoveryPolicy Never leaves it down'}`;
    this.#o.events.event(mr, 'Warning', PREEMPTED, message);
    logResource(this.#o.log, 'warn', mr, {}, message);
    this.#o.fleet.preempted();
    const conditions: ConditionInput[] = [{ type: 'Ready', status: 'False', reason: PREEMPTED, message }];
    if (refusal) {
      conditions.push({ type: 'Synced', status: 'False', reason: refusal.reason, message: refusal.message });
      this.#o.events.event(mr, 'Warning', refusal.reason, refusal.message);
    }
    const now = this.#o.clock.now();
    const placement = mr.status?.placement;
    await writeStatus(
      this.#o,
      mr,
      {
        ...statusAsIs(mr.status),
        ...countPreemption(mr.status, now),
        ...(placement ? { placement: withLoss(placement, PREEMPTED, now) } : {}),
      },
      conditions,
    );
  }
}

/** Whether a preempted object is replaced: recoveryPolicy Recreate, with the policies to delete and create. */
export function recreates(mr: ManagedObject<CommonSpec>): boolean {
  const policies = mr.spec.managementPolicies;
  return mr.spec.recoveryPolicy === 'Recreate' && allows(policies, 'Create') && allows(policies, 'Delete');
}

/** How long a preempted resource still waits before its replacement is created: 0 when it need not. */
export function recreateBackoff(status: ManagedStatus | undefined, now: number): number {
  const last = Date.parse(String(status?.lastPreemptionTime ?? ''));
  if (Number.isNaN(last) || readyReason(status) !== PREEMPTED) return 0;
  const preemptions = typeof status?.preemptions === 'number' ? status.preemptions : 1;
  const delay = Math.min(
    RECREATE_BACKOFF_MS.max,
    RECREATE_BACKOFF_MS.first * 2 ** Math.max(0, preemptions - 1),
  );
  return Math.max(0, last + delay - now);
}

/** The spot status as it stands: the preemptions counted, and the last one's time. */
export function spotStatus(status: ManagedStatus | undefined): Record<string, unknown> {
  return { preemptions: status?.preemptions, lastPreemptionTime: status?.lastPreemptionTime };
}

/** The spot status with one more preemption, seen at `now`. */
export function countPreemption(status: ManagedStatus | undefined, now: number): Record<string, unknown> {
  const preemptions = typeof status?.preemptions === 'number' ? status.preemptions : 0;
  return { preemptions: preemptions + 1, lastPreemptionTime: new Date(now).toISOString() };
}

/**
 * Recovery's part of a report: the spot status, and for a preempted object what Ready says, with the
 * preemption counted, told and measured once.
 */
export function preemptionReport<Spec extends CommonSpec, Cloud>(
  kind: string,
  adapter: Pick<ExternalKind<Spec, Cloud>, 'idOf'>,
  lost: LostObject | undefined,
  fleet: Pick<KindEvents, 'preempted'>,
): StatusContributor<Spec, Cloud> {
  return ({ mr, cloud, phase, now }) => {
    if (lost !== PREEMPTED) return { fields: spotStatus(mr.status) };
    const message = `the cloud took the spot capacity back (${phase}); ${
      recreates(mr) ? 'replacing it (recoveryPolicy Recreate)' : 'recoveryPolicy Never leaves it down'
    }`;
    const loss = { ready: false, reason: PREEMPTED, message };
    if (readyReason(mr.status) === PREEMPTED) return { fields: spotStatus(mr.status), loss };
    return {
      fields: countPreemption(mr.status, now),
      loss,
      warnings: [{ reason: PREEMPTED, message: `${kind} ${adapter.idOf(cloud)}: ${message}` }],
      landed: () => fleet.preempted(),
    };
  };
}
