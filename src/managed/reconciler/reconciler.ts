import type { Logger } from 'pino';
import type { Result } from '../../controller/controller.ts';
import type { ObjectKey } from '../../kube/object.ts';
import type { Clock } from '../../lib/clock.ts';
import type { AccountLink, AccountLinks } from '../accounts/account-links.ts';
import { NamespaceNotAllowedError } from '../accounts/accounts.ts';
import { EXTERNAL_ID, FINALIZER, namedId, OWNER_ENV, SKIP_RECONCILE } from '../core/annotations.ts';
import { cloudOwned } from '../core/cloud-owned.ts';
import { readyReason } from '../core/conditions.ts';
import { toReconcileError } from '../core/errors.ts';
import type { EventSink } from '../core/event-sink.ts';
import {
  type ActContext,
  type CommonSpec,
  type ExternalKind,
  keyOf,
  type ManagedObject,
  type Plan,
} from '../core/external-kind.ts';
import type { KindEvents } from '../core/fleet-metrics.ts';
import type { CloudView } from '../core/observed.ts';
import { allows } from '../core/policies.ts';
import { logResource } from '../core/resource-log.ts';
import type { StatusContributor } from '../core/status-contribution.ts';
import type { ManagedStore } from '../core/store.ts';
import type { ManagedWriter } from '../core/writer.ts';
import { aboveCap, FAILED_TO_START, placementReport } from '../creation/placement.ts';
import { Identity } from '../identity/identity.ts';
import { type Holding, LateInitialization, lateInitReport } from '../identity/late-initialization.ts';
import { Deletion } from '../lifecycle/deletion.ts';
import {
  type DeadlineState,
  OperatorPause,
  type PauseDecision,
  pauseReport,
} from '../lifecycle/operator-pause.ts';
import { type LostObject, preemptionReport, Recovery, recreateBackoff } from '../lifecycle/recovery.ts';
import { expireFinished, finishedAt } from '../lifecycle/time-to-live.ts';
import { FailureReport } from '../reporting/failure-report.ts';
import { StatusReport } from '../reporting/status-report.ts';
import { TerminalFailures } from '../reporting/terminal-failures.ts';
import type { SecretWatch } from '../secrets/secret-watch.ts';
import { resolveEnv } from '../secrets/secrets.ts';
import type { TurnCopies } from './turn-copies.ts';

export type { EventSink };

export interface ManagedReconcilerOptions<Spec extends CommonSpec, Cloud> {
  /** The kind's name, for messages. */
  kind: string;
  /** Validates the spec as stored (zod); a failure is a terminal `InvalidSpec`. */
  parseSpec(raw: unknown): Spec;
  store: ManagedStore;
  /** The writer every part of the reconciler and its links writes through: `turns.writer`. */
  writer: ManagedWriter;
  /** What each turn in flight wrote, so that its failure is reported on top of it. */
  turns: TurnCopies;
  events: EventSink;
  /** The cloud account each resource names, with the kind's adapter, cache and creation in it. */
  links: AccountLinks<Spec, Cloud>;
  /** The fleet metrics' events: first Ready, drift, preemption, terminal refusal. */
  fleet: KindEvents;
  /** After acting, look again this soon even if the cloud cache reports no change (a safety net). */
  verifyAfterMs: number;
  /** Secrets are read through it, so that their rotation wakes the resources that use them. */
  secrets: SecretWatch;
  clock: Clock;
  log: Logger;
}

/** Releases remembered until their delete event: more means events were missed, and the oldest go. */
const MAX_RELEASED = 10_000;
/** A connection Secret refused (not the resource's) is tried again this often, until its name is free. */
const SECRET_RECHECK_MS = 30_000;
/** A resource waiting on another looks again this often: a read of the informer caches, no cloud call. */
const BLOCKED_RECHECK_MS = 10_000;

/**
 * The one reconciler every kind shares: for one key, observe the cloud, compare with the spec, take at
 * most one step, report status. It owns the finalizer and the order of things, and delegates each part:
 * which object is the resource's (`Identity`), late initialisation (`LateInitialization`), a lost or
 * preempted object (`Recovery`), deletion and release (`Deletion`), status and failures (`StatusReport`,
 * `FailureReport`). The kind's `ExternalKind` adapter owns only its cloud calls and mappings.
 */
export class ManagedReconciler<Spec extends CommonSpec, Cloud> {
  readonly #o: ManagedReconcilerOptions<Spec, Cloud>;
  readonly #refused: TerminalFailures;
  readonly #identity: Identity<Spec, Cloud>;
  readonly #lateInit: LateInitialization<Spec, Cloud>;
  readonly #recovery: Recovery<Spec, Cloud>;
  readonly #status: StatusReport<Spec, Cloud>;
  readonly #failures: FailureReport;
  readonly #deletion: Deletion<Spec, Cloud>;
  readonly #pause: OperatorPause<Spec, Cloud>;
  /** Every part that remembers something per resource: each forgets it when the resource goes. */
  readonly #memories: ReadonlyArray<{ forget(uid: string): void }>;
  /** Resources the apiserver removed while they held the finalizer, by key, in the state they went in. */
  readonly #vanished = new Map<string, ManagedObject<unknown>>();
  /**
   * Uids whose finalizer this process removed, until their delete event comes: that event carries the
   * state stored before the removal (the apiserver deletes rather than writes the last update), finalizer
   * and all, and must not read as a vanished resource. Oldest first, bounded.
   */
  readonly #released = new Set<string>();

  constructor(options: ManagedReconcilerOptions<Spec, Cloud>) {
    this.#o = options;
    this.#refused = new TerminalFailures((account) => options.links.accountRevision(account));
    this.#identity = new Identity(options);
    this.#lateInit = new LateInitialization(options.writer);
    this.#pause = new OperatorPause(options);
    this.#recovery = new Recovery(options);
    this.#status = new StatusReport(options);
    this.#failures = new FailureReport(options, this.#refused);
    this.#memories = [
      this.#refused,
      this.#status,
      this.#pause,
      options.secrets,
      options.writer,
      options.turns,
      options.events,
    ];
    this.#deletion = new Deletion(options, this.#identity, this.#memories, (uid) => {
      this.#released.add(uid);
      if (this.#released.size > MAX_RELEASED)
        this.#released.delete(this.#released.values().next().value ?? '');
    });
  }

  /**
   * What this reconciler keeps per resource, by memory: each count is the resources (or, for the cloud
   * cache and the acts, cloud objects) it holds something for. Back to the live count once resources
   * have gone, whatever path they went by: a count that only grows is a leak.
   */
  remembered(): Record<string, number> {
    return {
      refusals: this.#refused.size,
      readiness: this.#status.size,
      pauses: this.#pause.size,
      secretReaders: this.#o.secrets.size,
      vanished: this.#vanished.size,
      released: this.#released.size,
      ownWrites: this.#o.writer.size,
      writtenOver: this.#o.turns.size,
      ...this.#o.links.remembered(),
    };
  }

  /**
   * The apiserver removed `obj` while it held the operator's finalizer. It does that when a DELETE read the
   * object before the finalizer was added and committed after (kubernetes/kubernetes#77988): the create
   * intent write that adds the finalizer can land in between, and the create goes out for a resource that
   * is already gone. Such a resource is finalized from the state it went in, as if its deletion had waited
   * for the finalizer. Only the state a watch delivered counts: a relist's last-seen state may predate a
   * change that matters (deletionPolicy set to Orphan, then released).
   */
  vanished(obj: ManagedObject<unknown>, finalState: boolean): void {
    const { uid } = obj.metadata;
    if (this.#released.delete(uid)) return;
    // Gone by another path (refused before the finalizer, a finalizer removed by hand, left alone by the
    // user's word): nothing is left to do for it, and nothing of it is kept.
    if (
      !finalState ||
      !obj.metadata.finalizers?.includes(FINALIZER) ||
      obj.metadata.annotations?.[SKIP_RECONCILE] === 'true'
    ) {
      this.#forget(obj);
      return;
    }
    const deletionTimestamp = obj.metadata.deletionTimestamp ?? new Date(this.#o.clock.now()).toISOString();
    this.#vanished.set(keyOf(obj), { ...obj, metadata: { ...obj.metadata, deletionTimestamp } });
  }

  /** The resources refused for good while naming `account`: its change may allow them now. */
  refusedOn(account: string): string[] {
    return this.#refused.keysOn(account);
  }

  #forget(obj: ManagedObject<unknown>): void {
    const { uid } = obj.metadata;
    for (const memory of this.#memories) memory.forget(uid);
    const ids = [obj.metadata.annotations?.[EXTERNAL_ID], obj.status?.id].filter(
      (id): id is string => typeof id === 'string' && id !== '',
    );
    this.#o.links.forget(uid, keyOf(obj), ids);
  }

  /** One turn for `key`; `signal` aborts it (a lost lease, a shutdown), its apiserver writes in flight too. */
  async reconcile(key: ObjectKey, signal?: AbortSignal): Promise<Result> {
    const stored = this.#read(key);
    const gone = this.#vanished.get(keyOf({ metadata: key }));
    if (gone && gone.metadata.uid !== stored?.metadata.uid) return this.#finalizeVanished(gone, stored);
    // The cache holds the resource after all (a delete event replayed out of order): it is not gone.
    if (gone) this.#vanished.delete(keyOf(gone));
    if (!stored) return {};
    // A copy this process has written over already: the event of that write brings the resource back.
    if (this.#o.turns.precedesOwnWrite(stored)) return { deferred: true };
    if (stored.metadata.annotations?.[SKIP_RECONCILE] === 'true') {
      return this.#deletion
        .releaseSkipped(stored)
        .catch((error: unknown) => this.#failures.report(stored, error, new Set()));
    }
    if (this.#refused.holds(stored)) return {};
    const revealed = new Set<string>();
    const { turns } = this.#o;
    turns.begin(stored.metadata.uid, signal);
    try {
      const mr: ManagedObject<Spec> = { ...stored, spec: this.#o.parseSpec(stored.spec) };
      // A finished object is never read again: only its time to live is left to keep.
      const finished = finishedAt(mr.status, this.#o.clock.now());
      if (finished !== undefined && !mr.metadata.deletionTimestamp) {
        return await expireFinished(this.#o, mr, finished);
      }
      const deleting = mr.metadata.deletionTimestamp !== undefined;
      const link = this.#linkFor(mr, deleting);
      if (!link) return await this.#deletion.releaseRefused(mr);
      const ctx = this.#context(mr, revealed);
      return deleting ? await this.#deletion.finalize(mr, link, ctx) : await this.#converge(mr, link, ctx);
    } catch (error) {
      return await this.#failures.report(turns.latest(stored), error, revealed, signal);
    } finally {
      turns.end(stored.metadata.uid);
    }
  }

  /**
   * Deletes what a vanished resource held or was being made for, as its deletion would have, with no
   * write to the resource (there is none). Retried with backoff until done; a resource of that name made
   * since is reconciled after.
   */
  async #finalizeVanished(
    gone: ManagedObject<unknown>,
    successor: ManagedObject<unknown> | undefined,
  ): Promise<Result> {
    const key = keyOf(gone);
    try {
      const mr: ManagedObject<Spec> = { ...gone, spec: this.#o.parseSpec(gone.spec) };
      const link = this.#linkFor(mr, true);
      const result = link
        ? await this.#deletion.finalize(mr, link, this.#context(mr, new Set()), { vanished: true })
        : {};
      if (result.requeueAfterMs !== undefined) return result;
      this.#vanished.delete(key);
      return successor ? { requeue: true } : {};
    } catch (error) {
      const failure = toReconcileError(error);
      logResource(
        this.#o.log,
        'warn',
        gone,
        { reason: failure.reason, err: failure },
        `the resource is gone; ${failure.message}`,
      );
      if (failure.terminal) {
        this.#vanished.delete(key);
        return {};
      }
      throw failure;
    }
  }

  /** The resource from the cache; one whose envelope is malformed is logged and left alone. */
  #read(key: ObjectKey): ManagedObject<unknown> | undefined {
    try {
      return this.#o.store.get(key);
    } catch (error) {
      this.#o.log.error(
        { resource: `${key.namespace}/${key.name}`, err: error },
        'malformed object; not reconciled',
      );
      return undefined;
    }
  }

  /**
   * The account the resource names, which refuses a namespace it does not list on every path. A deleted
   * resource it refuses is answered `undefined`: it never acted in that account, so it is let go.
   */
  #linkFor(mr: ManagedObject<Spec>, deleting: boolean): AccountLink<Spec, Cloud> | undefined {
    try {
      return this.#o.links.linkFor(mr);
    } catch (error) {
      if (deleting && error instanceof NamespaceNotAllowedError) return undefined;
      throw error;
    }
  }

  /** Observe, compare, act (one step at most), report, for a resource that is not being deleted. */
  async #converge(
    stored: ManagedObject<Spec>,
    link: AccountLink<Spec, Cloud>,
    ctx: ActContext,
  ): Promise<Result> {
    const { adapter } = link;
    const policies = stored.spec.managementPolicies;
    const named = namedId(stored) !== undefined;
    // Past a deadline that deletes, whatever happened since (a lost status write, a restart): no create.
    const ended = this.#pause.endedByDeadline(stored, link);
    if (ended && !named) return this.#endedAtDeadline(stored, ended);
    if (!named) {
      this.#identity.refuseUnlessCreates(stored);
      const backoff = recreateBackoff(stored.status, this.#o.clock.now());
      if (backoff > 0) return { requeueAfterMs: backoff };
      const blocked = adapter.identity?.blocker?.(stored);
      if (blocked) {
        await this.#status.reportBlocked(stored, blocked);
        return { requeueAfterMs: BLOCKED_RECHECK_MS };
      }
    }
    // A named object is observed before anything is written, so that the finalizer goes in the one write
    // that late-initialises the spec; a new one gets it with its create intent.
    const mr = named ? stored : await this.#ensureFinalizer(stored, link);
    const observed = await this.#identity.observeOrObtain(mr, link, ctx);
    if (observed.kind === 'wait') return { requeueAfterMs: observed.ms };
    if (observed.kind === 'missing') {
      return ended ? this.#endedAtDeadline(mr, ended) : this.#recovery.onMissing(mr, observed.id, link);
    }
    const taken = await this.#lateInit.takeHold(mr, observed, link);
    const pause = await this.#pause.decide(taken.mr, observed.cloud, link);
    const pausedBy = pause.pausedBy;
    // A new pause is recorded before the step that pauses, so that no successor undoes it.
    const holding =
      pausedBy && pausedBy.since !== taken.mr.status?.pausedBy?.since
        ? { ...taken, mr: await this.#status.recordPause(taken.mr, pausedBy) }
        : taken;
    const { deadline } = pause;
    if (deadline?.passed && deadline.action === 'Delete' && adapter.delete && allows(policies, 'Delete')) {
      return this.#deleteAtDeadline(holding, observed, pause, link);
    }
    // What the cloud may own takes its cloud value; paused by the operator, everything after sees the spec
    // as paused, the guardrails included. This copy is the one the plan and the turn's one observation
    // (`adapter.observe`, made where the report needs it, after the step: a plan may note what the status
    // shows) judge; each path below reports once.
    const owned = cloudOwned(holding.mr, observed.cloud, adapter);
    const held = {
      ...holding,
      mr: pause.pausedBy && adapter.pause ? { ...owned, spec: adapter.pause.paused(owned.spec) } : owned,
    };
    const lost = lostObject(held.mr, observed.cloud, adapter);
    const plan =
      lost === 'Preempted'
        ? this.#recovery.planAfterPreemption(held.mr, observed.cloud, link)
        : lost !== undefined
          ? this.#recovery.planReplacement(held.mr, observed.cloud, link, lost)
          : allows(policies, 'Update')
            ? await adapter.plan(held.mr, observed.cloud, ctx)
            : ({ kind: 'in-sync' } as const);
    const report = (rotated: readonly string[]) =>
      this.#status.report(
        held.mr,
        observed,
        adapter.observe(held.mr, observed.cloud),
        link,
        this.#contributors(held, lost, link, pause),
        { rotated },
      );
    if (lost !== undefined && plan.kind === 'act') {
      // The loss is recorded before its object is deleted: a turn that deleted it and then lost its status
      // write would leave an id the status never named, which no later turn could tell from a user's.
      const recorded = await report([]);
      await this.#act(recorded.mr, observed.cloud, plan, link);
      return { requeueAfterMs: this.#o.verifyAfterMs };
    }
    if (plan.kind === 'act') await this.#act(held.mr, observed.cloud, plan, link);
    const rotated =
      plan.kind === 'in-sync' && !lost && adapter.secrets?.rotatedSecrets && allows(policies, 'Update')
        ? await adapter.secrets.rotatedSecrets(held.mr, observed.cloud, ctx)
        : [];
    if (rotated.length > 0 && recreatesOnRotation(held.mr) && adapter.delete) {
      return this.#recreateForSecrets(held.mr, observed.cloud, rotated, link);
    }
    const reported = await report(rotated);
    const { finished, secretRefused } = reported;
    if (finished !== undefined) return expireFinished(this.#o, reported.mr, finished);
    if (plan.kind === 'act') return { requeueAfterMs: this.#o.verifyAfterMs };
    if (secretRefused) return { requeueAfterMs: SECRET_RECHECK_MS };
    const untilDeadline = deadline && !deadline.passed ? deadline.at - this.#o.clock.now() : undefined;
    const revisit = [adapter.revisit?.afterMs(held.mr), untilDeadline, pause.revisitAfterMs].filter(
      (ms) => ms !== undefined,
    );
    return revisit.length === 0 ? {} : { requeueAfterMs: Math.max(0, Math.min(...revisit)) };
  }

  /** The features' parts of a report, in the order their fields and Ready's overrides apply. */
  #contributors(
    held: Holding<Spec>,
    lost: LostObject | undefined,
    link: AccountLink<Spec, Cloud>,
    pause: PauseDecision,
  ): StatusContributor<Spec, Cloud>[] {
    const { kind, fleet } = this.#o;
    return [
      preemptionReport(kind, link.adapter, lost, fleet),
      lateInitReport(held),
      placementReport(kind, link.adapter, lost),
      pauseReport(pause),
    ];
  }

  /**
   * The deadline passed and asks for the object's deletion: deleted, and the resource finished (Failed,
   * DeadlineExceeded), so that it is never created again; its time to live then applies.
   */
  async #deleteAtDeadline(
    held: Holding<Spec>,
    observed: CloudView<Cloud>,
    pause: PauseDecision,
    link: AccountLink<Spec, Cloud>,
  ): Promise<Result> {
    const { adapter } = link;
    const remove = adapter.delete;
    const { deadline } = pause;
    if (!remove || !deadline) return {};
    const id = adapter.idOf(observed.cloud);
    // Recorded first: whatever is lost after the delete, the finish is worked out again from it.
    if (pause.startTime !== undefined)
      held = { ...held, mr: await this.#status.recordStart(held.mr, pause.startTime) };
    const message = this.#pause.deleting(held.mr, deadline);
    link.actedAt.set(id, link.cache.stamp());
    await remove(id);
    link.cache.requestRefresh();
    const ending = { reason: 'DeadlineExceeded', message };
    const reported = await this.#status.report(
      held.mr,
      observed,
      adapter.observe(held.mr, observed.cloud),
      link,
      this.#contributors(held, undefined, link, pause),
      { ending },
    );
    return reported.finished === undefined ? {} : expireFinished(this.#o, reported.mr, reported.finished);
  }

  /**
   * Secrets rotated that the object cannot take, and the resource asks for a new object: the old one is
   * deleted and, in the same turn, the resource stops naming it, so the next reconcile creates the new one
   * with the new values (crash-safe, as any create). A crash in between leaves an object gone while its
   * resource lives, which is made again all the same.
   */
  async #recreateForSecrets(
    mr: ManagedObject<Spec>,
    cloud: Cloud,
    rotated: readonly string[],
    link: AccountLink<Spec, Cloud>,
  ): Promise<Result> {
    const { adapter } = link;
    const id = adapter.idOf(cloud);
    const message = `deleting ${this.#o.kind} ${id} to create it again with the new values of Secret ${rotated.map((name) => `"${name}"`).join(', ')} (secretRotationPolicy Recreate)`;
    await adapter.delete?.(id);
    // Once the delete is answered: a list that was on its way meanwhile may still show the object live,
    // and the next reconcile must not take it for the one the resource still holds (ExternalIdChanged).
    link.actedAt.set(id, link.cache.stamp());
    link.cache.requestRefresh();
    await this.#o.writer.patchObject(mr, { annotations: { [EXTERNAL_ID]: null } });
    this.#o.events.event(mr, 'Normal', 'Recreating', message);
    logResource(this.#o.log, 'info', mr, { id }, message);
    return { requeue: true };
  }

  /** A resource past a deadline that deleted its object: finished, its time to live applies. */
  async #endedAtDeadline(mr: ManagedObject<Spec>, deadline: DeadlineState): Promise<Result> {
    const message = `its activeDeadlineSeconds (${deadline.seconds} s) passed at ${new Date(deadline.at).toISOString()}: its cloud ${this.#o.kind} is deleted, and it is not made again`;
    const ended = await this.#status.reportEnded(mr, { reason: 'DeadlineExceeded', message });
    return expireFinished(this.#o, ended.mr, ended.finished);
  }

  async #ensureFinalizer(
    mr: ManagedObject<Spec>,
    link: AccountLink<Spec, Cloud>,
  ): Promise<ManagedObject<Spec>> {
    const finalizers = mr.metadata.finalizers ?? [];
    if (finalizers.includes(FINALIZER)) return mr;
    // A first create writes the finalizer together with its intent, before any cloud call.
    if (namedId(mr) === undefined && link.creation.writesIntent(mr)) return mr;
    const metadata = await this.#o.writer.patchObject(mr, { finalizers: [...finalizers, FINALIZER] });
    return { ...mr, metadata };
  }

  /** Takes the one step planned, and marks the object acted on: older observations of it are stale. */
  async #act(
    mr: ManagedObject<Spec>,
    cloud: Cloud,
    plan: Extract<Plan, { kind: 'act' }>,
    link: AccountLink<Spec, Cloud>,
  ): Promise<void> {
    const id = link.adapter.idOf(cloud);
    link.actedAt.set(id, link.cache.stamp());
    await plan.step.run();
    link.cache.requestRefresh();
    this.#o.events.event(mr, 'Normal', plan.step.reason, plan.step.describe);
    logResource(this.#o.log, 'info', mr, { id, step: plan.step.reason }, plan.step.describe);
  }

  /** What the adapter may ask while it acts; Secret values it resolves are noted, to be scrubbed from errors. */
  #context(mr: ManagedObject<Spec>, revealed: Set<string>): ActContext {
    const secrets = this.#o.secrets.session(mr.metadata.uid, keyOf(mr));
    return {
      resolveEnv: (items) =>
        resolveEnv(mr.metadata.namespace, items, secrets.read, (value) => revealed.add(value)),
      secretsChanged: () => secrets.changed(),
      ownerMarker: { key: OWNER_ENV, value: mr.metadata.uid },
    };
  }
}

/**
 * Whether the object is lost while its resource lives: preempted (a spot object the cloud took back), or,
 * for a placed resource, failed before it ever ran or charged above its cap.
 */
function lostObject<Spec extends CommonSpec, Cloud>(
  mr: ManagedObject<Spec>,
  cloud: Cloud,
  adapter: ExternalKind<Spec, Cloud>,
): LostObject | undefined {
  if (adapter.spot?.preempted(cloud)) return 'Preempted';
  const placement = adapter.placement;
  if (!placement?.requested(mr.spec)) return undefined;
  // The recorded phase is this object's only if the status names it: a replacement starts with none. Once
  // recorded, the loss holds for the object until it is gone, though its status then shows it FAILED.
  const own = mr.status?.id === adapter.idOf(cloud);
  const recorded = own && readyReason(mr.status) === FAILED_TO_START;
  if (recorded || placement.failedToStart(cloud, own ? mr.status?.phase : undefined)) return 'FailedToStart';
  if (aboveCap(placement, mr.spec, cloud)) return 'AboveCap';
  return undefined;
}

/** Whether a rotation replaces the object: policy Recreate, with the policies to delete and create. */
function recreatesOnRotation(mr: ManagedObject<CommonSpec>): boolean {
  const policies = mr.spec.managementPolicies;
  return (
    mr.spec.secretRotationPolicy === 'Recreate' && allows(policies, 'Create') && allows(policies, 'Delete')
  );
}
