import type { Logger } from 'pino';
import type { Clock } from '../../lib/clock.ts';
import type { AccountLink } from '../accounts/account-links.ts';
import { driftOf } from '../core/cloud-owned.ts';
import type { ConditionInput } from '../core/conditions.ts';
import type { EventSink } from '../core/event-sink.ts';
import {
  type Blocker,
  type CommonSpec,
  keyOf,
  type ManagedObject,
  type Observation,
} from '../core/external-kind.ts';
import type { KindEvents } from '../core/fleet-metrics.ts';
import { type CloudView, fingerprintDigest } from '../core/observed.ts';
import { allows } from '../core/policies.ts';
import { logResource } from '../core/resource-log.ts';
import type { StatusContributor } from '../core/status-contribution.ts';
import type { PausedBy } from '../core/status-schema.ts';
import { statusAsIs, writeStatus } from '../core/status-write.ts';
import type { ManagedWriter } from '../core/writer.ts';
import { ConnectionSecrets } from '../secrets/connection-secret.ts';

/** The Synced reason of an object that keeps values of Secrets rotated since it was made. */
export const SECRET_ROTATED = 'SecretRotated';

export interface StatusReportOptions {
  /** The kind's name, for messages. */
  kind: string;
  writer: ManagedWriter;
  events: EventSink;
  fleet: Pick<KindEvents, 'becameReady' | 'drifted'>;
  clock: Clock;
  log: Logger;
}

/**
 * What a report tells the reconciler: the resource as written, when the object finished, and whether its
 * Secret was refused.
 */
export interface Reported<Spec> {
  mr: ManagedObject<Spec>;
  finished: number | undefined;
  secretRefused: boolean;
}

/**
 * Reports what the cloud object is: the status fields, the conditions (Ready, Synced, a finite object's
 * outcome), the details on their schedule, the connection Secret, and the Warning events and fleet
 * metrics that go with a change of those.
 */
export class StatusReport<Spec extends CommonSpec, Cloud> {
  readonly #o: StatusReportOptions;
  readonly #secrets: ConnectionSecrets;
  /** Resources seen Ready by this process, by uid: time to Ready is observed once. */
  readonly #readySeen = new Set<string>();

  constructor(options: StatusReportOptions) {
    this.#o = options;
    this.#secrets = new ConnectionSecrets(options.writer);
  }

  /**
   * `seen` is the turn's one observation of the object, made from `mr`: the phase, Ready, the kind's
   * fields and Synced's drift all come from it.
   */
  async report(
    mr: ManagedObject<Spec>,
    view: CloudView<Cloud>,
    seen: Observation,
    link: AccountLink<Spec, Cloud>,
    contributors: readonly StatusContributor<Spec, Cloud>[],
    {
      ending,
      rotated = [],
    }: { ending?: { reason: string; message: string }; rotated?: readonly string[] } = {},
  ): Promise<Reported<Spec>> {
    const { adapter } = link;
    const { cloud } = view;
    const { phase } = seen;
    const now = this.#o.clock.now();
    // Events and metrics follow the write: a turn working from a stale copy is refused its write and
    // must not say what it would have written.
    const told = new Told(this.#o.events, mr);
    const parts = contributors.map((contribute) => contribute({ mr, cloud, phase, now }));
    for (const part of parts) {
      if (part.landed) told.later(part.landed);
      for (const warning of part.warnings ?? []) told.warn(warning.reason, warning.message);
    }
    let readiness = seen.readiness;
    const loss = parts.find((part) => part.loss !== undefined)?.loss;
    if (loss) readiness = loss;
    else if (readiness.broken && mr.status?.phase !== phase) told.warn(readiness.reason, readiness.message);
    for (const part of parts) if (part.hold) readiness = part.hold;
    if (ending) readiness = { ready: false, ...ending };
    const conditions: ConditionInput[] = [
      {
        type: 'Ready',
        status: readiness.ready ? 'True' : 'False',
        reason: readiness.reason,
        message: readiness.message,
      },
      this.#synced(mr, seen, loss !== undefined, rotated, told),
      ...parts.flatMap((part) => part.conditions ?? []),
    ];
    const outcome = ending ? 'Failed' : adapter.finite?.outcomeOf(phase);
    if (outcome) {
      conditions.push({
        type: outcome,
        status: 'True',
        reason: readiness.reason,
        message: readiness.message,
      });
    }
    const completionTime = outcome && new Date(now).toISOString();
    // The list's view leaves out what only a get shows: the status, written from the same state, has it.
    const own = view.partial ? { ...statusAsIs(mr.status), ...definedOnly(seen.status) } : seen.status;
    const fields = {
      ...own,
      ...(await this.#detailsFor(mr, cloud, link, own)),
      ...Object.assign({}, ...parts.map((part) => part.fields)),
      completionTime,
      cloudFingerprint: fingerprintDigest(adapter.fingerprint(cloud)),
      id: adapter.idOf(cloud),
      phase,
    };
    const ref = mr.spec.writeConnectionSecretToRef;
    const refused =
      ref && adapter.secrets?.connectionDetails
        ? await this.#secrets.publish(mr, ref.name, adapter.secrets.connectionDetails(fields))
        : undefined;
    if (refused) {
      conditions[1] = { type: 'Synced', status: 'False', reason: refused.reason, message: refused.message };
      // Said once, when it starts; the condition keeps saying it.
      const before = mr.status?.conditions?.find((condition) => condition.type === 'Synced');
      if (before?.reason !== refused.reason) told.warn(refused.reason, refused.message);
    }
    const written = await writeStatus(this.#o, mr, fields, conditions);
    this.#noteReady(mr, readiness.ready);
    told.flush();
    return {
      mr: written,
      finished: completionTime === undefined ? undefined : Date.parse(completionTime),
      secretRefused: refused !== undefined,
    };
  }

  /**
   * The operator's pause, recorded before the step that pauses: a new leader that finds the object paused
   * reads why, and never resumes it for a spec that says `paused: false`.
   */
  async recordPause(mr: ManagedObject<Spec>, pausedBy: PausedBy): Promise<ManagedObject<Spec>> {
    return this.#record(mr, { pausedBy });
  }

  /** The start a deadline counts from, recorded before the deadline deletes: the finish is then derivable. */
  async recordStart(mr: ManagedObject<Spec>, startTime: string): Promise<ManagedObject<Spec>> {
    return mr.status?.startTime === startTime ? mr : this.#record(mr, { startTime });
  }

  async #record(mr: ManagedObject<Spec>, fields: Record<string, unknown>): Promise<ManagedObject<Spec>> {
    return writeStatus(this.#o, mr, { ...statusAsIs(mr.status), ...fields }, []);
  }

  /** Finished for good with `ending` (a deadline that deletes), its object gone: never made again. */
  async reportEnded(
    mr: ManagedObject<Spec>,
    ending: { reason: string; message: string },
  ): Promise<{ mr: ManagedObject<Spec>; finished: number }> {
    const completionTime = new Date(this.#o.clock.now()).toISOString();
    const written = await writeStatus(this.#o, mr, { ...statusAsIs(mr.status), completionTime }, [
      { type: 'Ready', status: 'False', ...ending },
      { type: 'Failed', status: 'True', ...ending },
      { type: ending.reason, status: 'True', ...ending },
    ]);
    return { mr: written, finished: Date.parse(completionTime) };
  }

  /** Not created yet, for a reason that is not this resource's (what it refers to is not ready). */
  async reportBlocked(mr: ManagedObject<Spec>, blocked: Blocker): Promise<void> {
    await writeStatus(this.#o, mr, statusAsIs(mr.status), [
      { type: 'Ready', status: 'False', reason: blocked.reason, message: blocked.message },
      { type: 'Synced', status: 'True', reason: 'ReconcileSuccess', message: '' },
    ]);
  }

  /** Resources it holds something for. */
  get size(): number {
    return Math.max(this.#readySeen.size, this.#secrets.size);
  }

  forget(uid: string): void {
    this.#readySeen.delete(uid);
    this.#secrets.forget(uid);
  }

  /**
   * The first Ready=True this process sees of a resource that was not Ready when it first saw it: the
   * time from creation to Ready. A resource already Ready (a restart) is only remembered.
   */
  #noteReady(mr: ManagedObject<Spec>, ready: boolean): void {
    const { uid } = mr.metadata;
    if (!ready || this.#readySeen.has(uid)) return;
    this.#readySeen.add(uid);
    const before = mr.status?.conditions?.find((condition) => condition.type === 'Ready');
    if (before?.status !== 'True') this.#o.fleet.becameReady(mr);
  }

  /** Synced: True, or False with reason Drifted naming the fields the cloud cannot change to match. */
  #synced(
    mr: ManagedObject<Spec>,
    seen: Observation,
    lost: boolean,
    rotated: readonly string[],
    told: Told,
  ): ConditionInput {
    const managed = allows(mr.spec.managementPolicies, 'Update') && !lost;
    const drifted = managed ? driftOf(mr, seen) : [];
    if (drifted.length === 0 && rotated.length > 0) return this.#rotated(mr, rotated, told);
    if (drifted.length === 0)
      return { type: 'Synced', status: 'True', reason: 'ReconcileSuccess', message: '' };
    const message =
      `the cloud ${this.#o.kind} differs in ${drifted.join(', ')}, which the cloud cannot change: set ` +
      "them to the cloud's values, or delete and recreate the resource to get what the spec asks";
    const before = mr.status?.conditions?.find((condition) => condition.type === 'Synced');
    if (before?.reason !== 'Drifted' || before.message !== message) {
      told.warn('Drifted', message);
      told.later(() => this.#o.fleet.drifted());
    }
    return { type: 'Synced', status: 'False', reason: 'Drifted', message };
  }

  /** Synced=False naming the Secrets whose new values the object cannot take, with a Warning when that changes. */
  #rotated(mr: ManagedObject<Spec>, rotated: readonly string[], told: Told): ConditionInput {
    const names = rotated.map((name) => `"${name}"`).join(', ');
    const message =
      `Secret ${names} changed since the cloud ${this.#o.kind} was created, and it keeps the environment it ` +
      'was created with: the cloud cannot change it. Delete and recreate the resource to run with the new values';
    const before = mr.status?.conditions?.find((condition) => condition.type === 'Synced');
    if (before?.reason !== SECRET_ROTATED || before.message !== message) told.warn(SECRET_ROTATED, message);
    return { type: 'Synced', status: 'False', reason: SECRET_ROTATED, message };
  }

  /** The details fields (runtime, metrics, task counts): fetched when due, else the last values. */
  async #detailsFor(
    mr: ManagedObject<Spec>,
    cloud: Cloud,
    link: AccountLink<Spec, Cloud>,
    status: Readonly<Record<string, unknown>>,
  ): Promise<Record<string, unknown>> {
    const { adapter, details: schedule } = link;
    const details = adapter.details;
    if (!details || !schedule) return {};
    const key = keyOf(mr);
    if (!details.applies(cloud)) {
      schedule.untrack(key);
    } else {
      // Details already in status (a restart) are refreshed in their turn, not all at once.
      schedule.track(
        key,
        details.fields.some((field) => mr.status?.[field] !== undefined),
      );
      if (schedule.isDue(key)) await this.#fetchDetails(mr, cloud, key, link, status);
    }
    return schedule.last(key) ?? carryOver(mr.status, details.fields);
  }

  async #fetchDetails(
    mr: ManagedObject<Spec>,
    cloud: Cloud,
    key: string,
    link: AccountLink<Spec, Cloud>,
    status: Readonly<Record<string, unknown>>,
  ): Promise<void> {
    let values: Record<string, unknown> | undefined;
    try {
      values = (await link.adapter.details?.fetch(cloud, status)) ?? {};
    } catch (error) {
      // Details are a nicety: a failure keeps the last values and never fails the reconcile.
      logResource(
        this.#o.log,
        'warn',
        mr,
        { err: error },
        'fetching details failed; keeping the last values',
      );
    } finally {
      link.details?.fetched(key, values);
    }
  }
}

/** Events and metrics of one report, told once its write has landed. */
class Told {
  readonly #events: EventSink;
  readonly #mr: ManagedObject<unknown>;
  readonly #pending: Array<() => void> = [];

  constructor(events: EventSink, mr: ManagedObject<unknown>) {
    this.#events = events;
    this.#mr = mr;
  }

  warn(reason: string, message: string): void {
    this.#pending.push(() => this.#events.event(this.#mr, 'Warning', reason, message));
  }

  later(tell: () => void): void {
    this.#pending.push(tell);
  }

  flush(): void {
    for (const tell of this.#pending.splice(0)) tell();
  }
}

function carryOver(
  status: Record<string, unknown> | undefined,
  fields: readonly string[],
): Record<string, unknown> {
  if (!status) return {};
  return Object.fromEntries(fields.filter((field) => field in status).map((field) => [field, status[field]]));
}

function definedOnly(fields: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined));
}
