import type { Logger } from 'pino';
import type { Clock } from '../../lib/clock.ts';
import type { AccountLink } from '../accounts/account-links.ts';
import { RESUME } from '../core/annotations.ts';
import type { EventSink } from '../core/event-sink.ts';
import {
  type CommonSpec,
  type Deadline,
  keyOf,
  type ManagedObject,
  meteringOf,
} from '../core/external-kind.ts';
import type { KindEvents } from '../core/fleet-metrics.ts';
import { logResource } from '../core/resource-log.ts';
import type { StatusContributor } from '../core/status-contribution.ts';
import type { PausedBy } from '../core/status-schema.ts';
import { BudgetShedding, type BudgetSheddingOptions } from './budget-shedding.ts';

export interface OperatorPauseOptions {
  /** The kind's name, for messages. */
  kind: string;
  events: EventSink;
  fleet: Pick<KindEvents, 'pausedByOperator' | 'deadlineExceeded'>;
  clock: Clock;
  log: Logger;
}

export type OperatorPauseSettings<Spec> = OperatorPauseOptions & BudgetSheddingOptions<Spec>;

/** A deadline as it stands for one resource: when it passes, and whether it has. */
export interface DeadlineState extends Deadline {
  readonly at: number;
  readonly passed: boolean;
}

/** What the operator's pause decides for one reconcile. */
export interface PauseDecision {
  /** The pause in force after this reconcile (kept, newly taken), or undefined. */
  readonly pausedBy: PausedBy | undefined;
  /** When the resource's deadline counts from, once its first object is known. */
  readonly startTime: string | undefined;
  readonly deadline: DeadlineState | undefined;
  /** Look again this soon though nothing changes: a budget that pauses pods may go over meanwhile. */
  readonly revisitAfterMs: number | undefined;
  /**
   * Its user lifted the pause and nothing holds it: says so, once the status that drops the pause has
   * landed. A turn working from a stale copy is refused that write and must not say it.
   */
  readonly resumed?: (() => void) | undefined;
}

/**
 * The operator's own pause of an object its user did not pause — idle, past its deadline, over a budget —
 * kept as `status.pausedBy`, never as `spec.paused`: a GitOps tool would sync the spec back and resume
 * it. While it holds, the plan, readiness and guardrails see the spec as paused. It survives restarts and
 * leader changes (it is in the status), and only the resource's user lifts it: a new generation of the
 * spec, or a new value of the `gpucloud.io/resume` annotation.
 */
export class OperatorPause<Spec extends CommonSpec, Cloud> {
  readonly #o: OperatorPauseOptions;
  readonly #shedding: BudgetShedding<Spec, Cloud>;
  /** Pauses this process took, by uid, until their user lifts them or the resource is let go. */
  readonly #taken = new Map<string, PausedBy>();

  constructor(options: OperatorPauseSettings<Spec>) {
    this.#o = options;
    this.#shedding = new BudgetShedding(options);
  }

  async decide(
    mr: ManagedObject<Spec>,
    cloud: Cloud,
    link: AccountLink<Spec, Cloud>,
  ): Promise<PauseDecision> {
    const { adapter } = link;
    const now = this.#o.clock.now();
    const startTime = adapter.deadline
      ? (mr.status?.startTime ?? isoTime(adapter.createdAtOf(cloud)))
      : undefined;
    const rule = adapter.deadline?.of(mr.spec);
    const deadline = rule && startTime !== undefined ? deadlineOf(rule, startTime, now) : undefined;
    const held = this.#held(mr);
    let pausedBy = held.inForce;
    if (!pausedBy && adapter.pause && deadline?.passed && deadline.action === 'Pause') {
      pausedBy = this.#take(mr, 'DeadlineExceeded', deadlineMessage(deadline), now);
    }
    if (pausedBy) {
      link.idle?.untrack(keyOf(mr));
    } else {
      const idle = await this.#idle(mr, cloud, link, now);
      if (idle !== undefined) pausedBy = this.#take(mr, 'Idle', idle, now);
    }
    if (!pausedBy && held.lifted?.reason === 'BudgetExceeded' && meteringOf(adapter).heldGpus(cloud) === 0) {
      // Lifted while the budget is still over: paused again at once, under the user's new word, so that
      // the status names the pause that holds it and the request is answered once, not on every retry.
      const still = await this.#shedding.stillOver(mr, link);
      if (still !== undefined) {
        pausedBy = this.#take(mr, 'BudgetExceeded', `${still}; its user resumed it while it still is`, now);
      }
    }
    if (!pausedBy) {
      const overBudget = await this.#shedding.decide(mr, cloud, link);
      if (overBudget !== undefined) pausedBy = this.#take(mr, 'BudgetExceeded', overBudget, now);
    }
    const lifted = held.lifted && !pausedBy ? held.lifted : undefined;
    const resumed = lifted
      ? () => {
          const message = `resumed by its user (${held.how}); it was paused: ${lifted.message}`;
          this.#o.events.event(mr, 'Normal', 'Resumed', message);
          logResource(this.#o.log, 'info', mr, {}, message);
        }
      : undefined;
    return {
      pausedBy,
      startTime,
      deadline,
      revisitAfterMs: this.#shedding.watches(mr, link),
      ...(resumed && { resumed }),
    };
  }

  /**
   * A deadline that deletes and has passed, read from the resource alone (its spec and the start time its
   * status recorded): the resource is finished whatever became of its object, and is never made again.
   */
  endedByDeadline(
    mr: ManagedObject<Spec>,
    link: Pick<AccountLink<Spec, Cloud>, 'adapter'>,
  ): DeadlineState | undefined {
    const rule = link.adapter.deadline?.of(mr.spec);
    const startTime = mr.status?.startTime;
    if (rule?.action !== 'Delete' || startTime === undefined) return undefined;
    const deadline = deadlineOf(rule, startTime, this.#o.clock.now());
    return deadline.passed ? deadline : undefined;
  }

  /** Resources it holds something for. */
  get size(): number {
    return this.#taken.size;
  }

  forget(uid: string): void {
    this.#taken.delete(uid);
  }

  /** The deadline has passed with action Delete: said once, as the object is deleted for good. */
  deleting(mr: ManagedObject<Spec>, deadline: DeadlineState): string {
    const message = `${deadlineMessage(deadline)}: deleting the cloud ${this.#o.kind}, which is not made again`;
    this.#o.events.event(mr, 'Warning', 'DeadlineExceeded', message);
    this.#o.fleet.deadlineExceeded('Delete');
    logResource(this.#o.log, 'warn', mr, {}, message);
    return message;
  }

  /** `status.pausedBy` in force, or the pause its user lifted since, and how. */
  #held(mr: ManagedObject<Spec>): { inForce?: PausedBy; lifted?: PausedBy; how?: string } {
    const { uid } = mr.metadata;
    // What this process took is kept, whatever the status says meanwhile: a copy read before that write,
    // or a status a failure report rewrote from an older copy, must not undo a pause already sent, even
    // after a copy that showed it (the informer may deliver the pause's write before the rewrite).
    const recorded = mr.status?.pausedBy;
    const pausedBy = recorded ?? this.#taken.get(uid);
    if (!pausedBy) return {};
    const token = mr.metadata.annotations?.[RESUME];
    const newSpec = (mr.metadata.generation ?? 0) > pausedBy.generation;
    if (!newSpec && token === pausedBy.resumeToken) return { inForce: pausedBy };
    this.#taken.delete(uid);
    return { lifted: pausedBy, how: newSpec ? 'a new spec' : `annotation ${RESUME}` };
  }

  #take(mr: ManagedObject<Spec>, reason: PausedBy['reason'], why: string, now: number): PausedBy {
    const message = `paused by the operator: ${why}; it resumes when its user changes the spec or sets annotation ${RESUME} (gpucloud resume)`;
    this.#o.events.event(mr, 'Warning', reason, message);
    this.#o.fleet.pausedByOperator(reason);
    if (reason === 'DeadlineExceeded') this.#o.fleet.deadlineExceeded('Pause');
    logResource(this.#o.log, 'warn', mr, { reason }, message);
    const pausedBy: PausedBy = {
      reason,
      message,
      since: new Date(now).toISOString(),
      generation: mr.metadata.generation ?? 0,
      resumeToken: mr.metadata.annotations?.[RESUME],
    };
    this.#taken.set(mr.metadata.uid, pausedBy);
    return pausedBy;
  }

  /**
   * Why the object is idle, looked at on the idle schedule's budget (one `check` a turn), only for
   * resources that ask and objects that run; undefined while it is not, or not known to be.
   */
  async #idle(
    mr: ManagedObject<Spec>,
    cloud: Cloud,
    link: AccountLink<Spec, Cloud>,
    now: number,
  ): Promise<string | undefined> {
    const idle = link.adapter.pause?.idle;
    const schedule = link.idle;
    if (!idle || !schedule) return undefined;
    const key = keyOf(mr);
    const rule = idle.rule(mr.spec);
    if (!rule || !idle.applies(cloud)) {
      schedule.untrack(key);
      return undefined;
    }
    schedule.track(key);
    if (!schedule.isDue(key)) return undefined;
    // Idle for the window means idle since the object last came up: its samples from before a pause (one
    // its user just lifted, say) say nothing of this run, and a pause shorter than the check's slack
    // leaves no gap in them. Ready=True since before the window is when it came up, as the status says.
    if (!(readySince(mr) <= now - rule.forMinutes * 60_000)) {
      schedule.fetched(key, {});
      return undefined;
    }
    let found: string | undefined;
    try {
      found = await idle.check(cloud, rule, now);
    } catch (error) {
      // Not known to be idle is not idle: the next turn looks again.
      logResource(this.#o.log, 'warn', mr, { err: error }, 'reading GPU utilisation failed; not idle');
    } finally {
      schedule.fetched(key, {});
    }
    return found;
  }
}

/** Since when the resource has been Ready, in epoch ms; NaN while it is not. */
function readySince(mr: ManagedObject<unknown>): number {
  const ready = mr.status?.conditions?.find((condition) => condition.type === 'Ready');
  return ready?.status === 'True' ? Date.parse(ready.lastTransitionTime) : Number.NaN;
}

/** A cloud time as RFC 3339; undefined when the cloud gave none that reads (a deadline then waits for one). */
function isoTime(epochMs: number): string | undefined {
  return Number.isFinite(epochMs) && epochMs > 0 ? new Date(epochMs).toISOString() : undefined;
}

function deadlineOf(rule: Deadline, startTime: string, now: number): DeadlineState {
  const at = Date.parse(startTime) + rule.seconds * 1000;
  return { ...rule, at, passed: now >= at };
}

function deadlineMessage(deadline: DeadlineState): string {
  return `its activeDeadlineSeconds (${deadline.seconds} s) passed at ${new Date(deadline.at).toISOString()}`;
}

/**
 * The operator's pause's part of a report: the pause in force and what Ready says while it holds, the start
 * a deadline counts from, and the deadline with its condition.
 */
export function pauseReport<Spec, Cloud>(pause: PauseDecision | undefined): StatusContributor<Spec, Cloud> {
  return () => {
    const pausedBy = pause?.pausedBy;
    const deadline = pause?.deadline;
    return {
      fields: {
        pausedBy,
        startTime: pause?.startTime,
        deadlineTime: deadline && new Date(deadline.at).toISOString(),
      },
      ...(pausedBy && { hold: { ready: false, reason: pausedBy.reason, message: pausedBy.message } }),
      ...(pause?.resumed && { landed: pause.resumed }),
      conditions: deadline
        ? [
            {
              type: 'DeadlineExceeded',
              status: deadline.passed ? 'True' : 'False',
              reason: deadline.passed ? 'DeadlineExceeded' : 'WithinDeadline',
              message: `activeDeadlineSeconds ${deadline.seconds}: ${deadline.passed ? 'passed' : 'passes'} at ${new Date(deadline.at).toISOString()}`,
            },
          ]
        : [],
    };
  };
}
