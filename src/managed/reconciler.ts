import type { Logger } from 'pino';
import type { Result } from '../controller/controller.ts';
import type { ObjectKey } from '../kube/object.ts';
import { accountOf, NamespaceNotAllowedError } from './accounts.ts';
import { EXTERNAL_ID, FINALIZER, OWNER_ENV, SKIP_RECONCILE } from './annotations.ts';
import { cloudObjectOf, forgetCloud, isLive } from './cloud-view.ts';
import type { Connection, ConnectionPool } from './connections.ts';
import type { EventSink } from './event-sink.ts';
import { type ActContext, type CommonSpec, keyOf, type ManagedObject, type Plan } from './external-kind.ts';
import { FailureReport } from './failure-report.ts';
import type { KindEvents } from './fleet-metrics.ts';
import { Identity } from './identity.ts';
import { LateInitialization } from './late-initialization.ts';
import { allows } from './policies.ts';
import { Recovery, recreateBackoff } from './recovery.ts';
import { logResource } from './resource-log.ts';
import { resolveEnv } from './secrets.ts';
import { StatusReport } from './status-report.ts';
import type { ManagedStore } from './store.ts';
import { TerminalFailures } from './terminal-failures.ts';
import { expireFinished, finishedAt } from './time-to-live.ts';
import type { ManagedWriter } from './writer.ts';

export type { EventSink };

export interface ManagedReconcilerOptions<Spec extends CommonSpec, Cloud> {
  /** The kind's name, for messages. */
  kind: string;
  /** Validates the spec as stored (zod); a failure is a terminal `InvalidSpec`. */
  parseSpec(raw: unknown): Spec;
  store: ManagedStore;
  writer: ManagedWriter;
  events: EventSink;
  /** The cloud account each resource names, with the kind's adapter, cache and creation in it. */
  connections: ConnectionPool<Spec, Cloud>;
  /** The fleet metrics' events: first Ready, drift, preemption, terminal refusal. */
  fleet: KindEvents;
  /** After acting, look again this soon even if the cloud cache reports no change (a safety net). */
  verifyAfterMs: number;
  log: Logger;
}

/** One reconcile's means: how to act for the resource, and in which account. */
interface Turn<Spec extends CommonSpec, Cloud> {
  ctx: ActContext;
  conn: Connection<Spec, Cloud>;
}

/** A connection Secret refused (not the resource's) is tried again this often, until its name is free. */
const SECRET_RECHECK_MS = 30_000;
/** A resource waiting on another looks again this often: a read of the informer caches, no cloud call. */
const BLOCKED_RECHECK_MS = 10_000;

/**
 * The one reconciler every kind shares: observe the cloud, compare with the spec, take at most one step,
 * report status. It owns the finalizer, deletion policy, adoption, crash-safe creation, conditions,
 * events and error handling; the kind's `ExternalKind` adapter owns only its cloud calls and mappings.
 */
export class ManagedReconciler<Spec extends CommonSpec, Cloud> {
  readonly #o: ManagedReconcilerOptions<Spec, Cloud>;
  readonly #refused = new TerminalFailures();
  readonly #identity: Identity<Spec, Cloud>;
  readonly #lateInit: LateInitialization<Spec, Cloud>;
  readonly #recovery: Recovery<Spec, Cloud>;
  readonly #status: StatusReport<Spec, Cloud>;
  readonly #failures: FailureReport;

  constructor(options: ManagedReconcilerOptions<Spec, Cloud>) {
    this.#o = options;
    this.#identity = new Identity(options);
    this.#lateInit = new LateInitialization(options.writer);
    this.#recovery = new Recovery(options);
    this.#status = new StatusReport(options);
    this.#failures = new FailureReport(options, this.#refused);
  }

  async reconcile(key: ObjectKey): Promise<Result> {
    const stored = this.#read(key);
    if (!stored) return {};
    if (stored.metadata.annotations?.[SKIP_RECONCILE] === 'true') return this.#skip(stored);
    if (this.#refused.holds(stored)) return {};
    const revealed = new Set<string>();
    try {
      const mr: ManagedObject<Spec> = { ...stored, spec: this.#o.parseSpec(stored.spec) };
      // A finished object is never read again: only its time to live is left to keep.
      const finished = finishedAt(mr.status);
      if (finished !== undefined && !mr.metadata.deletionTimestamp)
        return await expireFinished(this.#o, mr, finished);
      const deleting = mr.metadata.deletionTimestamp !== undefined;
      const conn = this.#connect(mr, deleting);
      if (!conn) return await this.#releaseRefused(mr);
      const turn = { ctx: this.#context(mr, revealed), conn };
      return deleting ? await this.#finalize(mr, turn) : await this.#converge(mr, turn);
    } catch (error) {
      return this.#failures.report(stored, error, revealed);
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
   * A skipped resource gets no cloud call and no status write, and its deletion is not held up: the
   * finalizer goes and the cloud resource is left as it is, as the user asked.
   */
  async #skip(mr: ManagedObject<unknown>): Promise<Result> {
    if (!mr.metadata.deletionTimestamp || !mr.metadata.finalizers?.includes(FINALIZER)) return {};
    try {
      await this.#release(
        mr,
        'Skipped',
        `${SKIP_RECONCILE} is set: the cloud resource is left as it is`,
        undefined,
      );
      return {};
    } catch (error) {
      return this.#failures.report(mr, error, new Set());
    }
  }

  /**
   * The account the resource names, which refuses a namespace it does not list on every path. A deleted
   * resource it refuses is answered `undefined`: it never acted in that account, so it is let go.
   */
  #connect(mr: ManagedObject<Spec>, deleting: boolean): Connection<Spec, Cloud> | undefined {
    try {
      return this.#o.connections.connect(mr);
    } catch (error) {
      if (deleting && error instanceof NamespaceNotAllowedError) return undefined;
      throw error;
    }
  }

  /** Lets go of a deleted resource whose namespace may not use its account: no cloud call at all. */
  async #releaseRefused(mr: ManagedObject<Spec>): Promise<Result> {
    if (!mr.metadata.finalizers?.includes(FINALIZER)) return {};
    const message =
      `namespace ${mr.metadata.namespace} may not use provider config ${accountOf(mr.spec)}: nothing in ` +
      'that account was touched for this resource, and nothing is deleted';
    await this.#release(mr, 'ProviderConfigNotAllowed', message, undefined);
    return {};
  }

  async #converge(stored: ManagedObject<Spec>, t: Turn<Spec, Cloud>): Promise<Result> {
    const { adapter } = t.conn;
    const policies = stored.spec.managementPolicies;
    const named = stored.metadata.annotations?.[EXTERNAL_ID] !== undefined;
    if (!named) {
      this.#identity.refuseUnlessCreates(stored);
      const backoff = recreateBackoff(stored.status);
      if (backoff > 0) return { requeueAfterMs: backoff };
      const blocked = adapter.blocker?.(stored);
      if (blocked) {
        await this.#status.reportBlocked(stored, blocked);
        return { requeueAfterMs: BLOCKED_RECHECK_MS };
      }
    }
    // A named object is observed before anything is written, so that the finalizer goes in the one write
    // that late-initialises the spec; a new one gets it with its create intent.
    const mr = named ? stored : await this.#ensureFinalizer(stored, t);
    const observed = await this.#identity.observeOrObtain(mr, t.conn, t.ctx);
    if (observed.kind === 'wait') return { requeueAfterMs: observed.ms };
    if (observed.kind === 'missing') return this.#recovery.onMissing(mr, observed.id, t.conn);
    const held = await this.#lateInit.takeHold(mr, observed, t.conn);
    const preempted = adapter.spot?.preempted(observed.cloud) ?? false;
    const plan = preempted
      ? this.#recovery.planAfterPreemption(held.mr, observed.cloud, t.conn)
      : allows(policies, 'Update')
        ? await adapter.plan(held.mr, observed.cloud, t.ctx)
        : ({ kind: 'in-sync' } as const);
    if (plan.kind === 'act') await this.#act(held.mr, observed.cloud, plan, t);
    const { finished, secretRefused } = await this.#status.report(held, observed, preempted, t.conn);
    // The status holds it now; a copy older than this write is a matter of milliseconds, not a minute.
    this.#lateInit.forgetExpired();
    if (finished !== undefined) return expireFinished(this.#o, held.mr, finished);
    if (plan.kind === 'act') return { requeueAfterMs: this.#o.verifyAfterMs };
    if (secretRefused) return { requeueAfterMs: SECRET_RECHECK_MS };
    const revisit = adapter.revisitAfterMs?.(held.mr);
    return revisit === undefined ? {} : { requeueAfterMs: revisit };
  }

  async #act(
    mr: ManagedObject<Spec>,
    cloud: Cloud,
    plan: Extract<Plan, { kind: 'act' }>,
    { conn }: Turn<Spec, Cloud>,
  ): Promise<void> {
    const id = conn.adapter.idOf(cloud);
    conn.actedAt.set(id, Date.now());
    await plan.step.run();
    conn.cache.requestRefresh();
    this.#o.events.event(mr, 'Normal', plan.step.reason, plan.step.describe);
    logResource(this.#o.log, 'info', mr, { id, step: plan.step.reason }, plan.step.describe);
  }

  async #finalize(mr: ManagedObject<Spec>, t: Turn<Spec, Cloud>): Promise<Result> {
    if (!mr.metadata.finalizers?.includes(FINALIZER)) return {};
    const { conn } = t;
    const { kind, events } = this.#o;
    // Reconciles of one resource never overlap, so no create of its own is in flight here.
    const remove = conn.adapter.delete;
    if (!remove) {
      await this.#release(mr, 'Released', `a ${kind} leaves nothing in the cloud to delete`, conn);
      return {};
    }
    if (mr.spec.deletionPolicy === 'Orphan') {
      await this.#release(
        mr,
        'Orphaned',
        'deletionPolicy is Orphan: the cloud resource is left running',
        conn,
      );
      return {};
    }
    if (!allows(mr.spec.managementPolicies, 'Delete')) {
      await this.#release(
        mr,
        'Orphaned',
        'managementPolicies do not include Delete: the cloud resource is left as it is',
        conn,
      );
      return {};
    }
    const id = await this.#idForDeletion(mr, t);
    if (id === 'wait') return { requeueAfterMs: this.#o.verifyAfterMs };
    const cloud = id === undefined ? undefined : await cloudObjectOf(id, t.conn);
    if (id === undefined || !cloud || conn.adapter.isGone(cloud)) {
      await this.#release(
        mr,
        'Deleted',
        id ? `${kind} ${id} is deleted in the cloud` : 'nothing to delete',
        conn,
      );
      return {};
    }
    conn.actedAt.set(id, Date.now());
    await remove(id);
    conn.cache.requestRefresh();
    events.event(mr, 'Normal', 'Deleting', `deleting ${kind} ${id} in the cloud`);
    return { requeueAfterMs: this.#o.verifyAfterMs };
  }

  /**
   * The id to delete: the object this resource holds — the one its status records while that lives, else
   * the annotated one if the claim on it holds — or what an interrupted create may have made. Deleting a
   * resource never deletes an object it could not show was its own.
   */
  async #idForDeletion(mr: ManagedObject<Spec>, t: Turn<Spec, Cloud>): Promise<string | undefined | 'wait'> {
    const { creation, adapter } = t.conn;
    const held = mr.status?.id;
    const recorded = mr.metadata.annotations?.[EXTERNAL_ID];
    if (held !== undefined && held !== recorded && (await isLive(held, t.conn))) return held;
    if (recorded) {
      if (
        !this.#identity.mayAdopt(mr, recorded, t.conn) ||
        !this.#identity.claimVerdict(mr, recorded, undefined, t.conn).holds
      )
        return undefined;
      const cloud = await cloudObjectOf(recorded, t.conn);
      return cloud && !this.#identity.claimVerdict(mr, recorded, cloud, t.conn).holds ? undefined : recorded;
    }
    const intentAt = creation.intentAt(mr);
    if (intentAt === undefined) return undefined;
    const found = await creation.find(mr, intentAt, t.ctx);
    if (found.kind === 'wait') return 'wait';
    return found.cloud && adapter.idOf(found.cloud);
  }

  /** Lets the resource go; `conn` undefined when it was never connected to an account (skipped). */
  async #release(
    mr: ManagedObject<unknown>,
    reason: string,
    message: string,
    conn: Connection<Spec, Cloud> | undefined,
  ): Promise<void> {
    const finalizers = (mr.metadata.finalizers ?? []).filter((f) => f !== FINALIZER);
    await this.#o.writer.patchObject(mr, { finalizers });
    this.#refused.forget(mr.metadata.uid);
    this.#lateInit.forget(mr.metadata.uid);
    this.#status.forget(mr.metadata.uid);
    const id = mr.metadata.annotations?.[EXTERNAL_ID];
    if (conn) {
      conn.creation.forget(mr.metadata.uid);
      if (id) forgetCloud(id, conn);
      conn.details?.untrack(keyOf(mr));
    }
    this.#o.events.event(mr, 'Normal', reason, message);
    logResource(this.#o.log, 'info', mr, { id }, message);
  }

  async #ensureFinalizer(mr: ManagedObject<Spec>, { conn }: Turn<Spec, Cloud>): Promise<ManagedObject<Spec>> {
    const finalizers = mr.metadata.finalizers ?? [];
    if (finalizers.includes(FINALIZER)) return mr;
    // A first create writes the finalizer together with its intent, before any cloud call.
    if (!mr.metadata.annotations?.[EXTERNAL_ID] && conn.creation.writesIntent(mr)) return mr;
    const metadata = await this.#o.writer.patchObject(mr, { finalizers: [...finalizers, FINALIZER] });
    return { ...mr, metadata };
  }

  #context(mr: ManagedObject<Spec>, revealed: Set<string>): ActContext {
    return {
      resolveEnv: (items) =>
        resolveEnv(
          mr.metadata.namespace,
          items,
          (ns, name) => this.#o.writer.readSecret(ns, name),
          (value) => revealed.add(value),
        ),
      ownerMarker: { key: OWNER_ENV, value: mr.metadata.uid },
    };
  }
}
