import type { Logger } from 'pino';
import type { Result } from '../../controller/controller.ts';
import type { Clock } from '../../lib/clock.ts';
import type { AccountLink } from '../accounts/account-links.ts';
import { accountOf } from '../core/account-ref.ts';
import {
  DELETION_PROTECTION,
  FINALIZER,
  isDeletionProtected,
  namedId,
  SKIP_RECONCILE,
} from '../core/annotations.ts';
import { isNotFound } from '../core/errors.ts';
import type { EventSink } from '../core/event-sink.ts';
import { type ActContext, type CommonSpec, keyOf, type ManagedObject } from '../core/external-kind.ts';
import { allows } from '../core/policies.ts';
import { logResource } from '../core/resource-log.ts';
import { statusAsIs, writeStatus } from '../core/status-write.ts';
import type { ManagedWriter } from '../core/writer.ts';
import { cloudObjectOf, forgetCloud, isLive } from '../identity/cloud-view.ts';
import type { Identity } from '../identity/identity.ts';

export interface DeletionOptions {
  /** The kind's name, for messages. */
  kind: string;
  writer: ManagedWriter;
  events: EventSink;
  /** After a delete call, look again this soon even if the cloud cache reports no change. */
  verifyAfterMs: number;
  clock: Clock;
  log: Logger;
}

/** The Synced reason of a protected resource whose deletion is held. */
export const DELETION_PROTECTED = 'DeletionProtected';

/** Something this process remembers of a resource by uid, forgotten when the resource is let go. */
export interface Memory {
  forget(uid: string): void;
}

/**
 * Deletion and release: a deleted resource's cloud object is deleted, as its deletion policy and
 * management policies allow, and only if the resource can show it is its own; then, or at once when
 * nothing is to be deleted, the finalizer goes and everything remembered of the resource with it.
 */
export class Deletion<Spec extends CommonSpec, Cloud> {
  readonly #o: DeletionOptions;
  readonly #claims: Pick<Identity<Spec, Cloud>, 'mayAdopt' | 'claimVerdict'>;
  readonly #memories: readonly Memory[];

  readonly #onReleased: (uid: string) => void;

  /** `onReleased`: told of each finalizer this process removes, before the removal is sent. */
  constructor(
    options: DeletionOptions,
    claims: Pick<Identity<Spec, Cloud>, 'mayAdopt' | 'claimVerdict'>,
    memories: readonly Memory[],
    onReleased: (uid: string) => void,
  ) {
    this.#o = options;
    this.#claims = claims;
    this.#memories = memories;
    this.#onReleased = onReleased;
  }

  /**
   * `vanished`: the apiserver has already removed the resource (see `ManagedReconciler.vanished`), so its
   * cloud object is dealt with as its deletion would, and there is no finalizer left to remove.
   */
  async finalize(
    mr: ManagedObject<Spec>,
    link: AccountLink<Spec, Cloud>,
    ctx: ActContext,
    { vanished = false } = {},
  ): Promise<Result> {
    if (!mr.metadata.finalizers?.includes(FINALIZER)) return {};
    const release = (reason: string, message: string) => this.#release(mr, reason, message, link, vanished);
    const { kind, events } = this.#o;
    // Reconciles of one resource never overlap, so no create of its own is in flight here.
    const remove = link.adapter.delete;
    if (!remove) {
      await release('Released', `a ${kind} leaves nothing in the cloud to delete`);
      return {};
    }
    if (mr.spec.deletionPolicy === 'Orphan') {
      await release('Orphaned', 'deletionPolicy is Orphan: the cloud resource is left running');
      return {};
    }
    if (!allows(mr.spec.managementPolicies, 'Delete')) {
      await release(
        'Orphaned',
        'managementPolicies do not include Delete: the cloud resource is left as it is',
      );
      return {};
    }
    const id = await this.#idForDeletion(mr, link, ctx);
    if (id === 'wait') return { requeueAfterMs: this.#o.verifyAfterMs };
    const cloud = id === undefined ? undefined : await cloudObjectOf(id, link);
    if (id === undefined || !cloud || link.adapter.isGone(cloud)) {
      await release('Deleted', id ? `${kind} ${id} is deleted in the cloud` : 'nothing to delete');
      return {};
    }
    // The second line behind the admission policy, for clusters without it: the object is kept.
    if (isDeletionProtected(mr)) return this.#refuseProtected(mr, id, vanished);
    link.actedAt.set(id, link.cache.stamp());
    await remove(id);
    link.cache.requestRefresh();
    events.event(mr, 'Normal', 'Deleting', `deleting ${kind} ${id} in the cloud`);
    return { requeueAfterMs: this.#o.verifyAfterMs };
  }

  /**
   * A protected resource being deleted keeps its finalizer and its cloud object, and says so on its status
   * and in a Warning event, until the annotation goes (an annotation change reconciles it again). One the
   * apiserver removed anyway (vanished) leaves its object running: nothing is left to lift the protection.
   */
  async #refuseProtected(mr: ManagedObject<Spec>, id: string, vanished: boolean): Promise<Result> {
    const { kind } = this.#o;
    if (vanished) {
      logResource(
        this.#o.log,
        'warn',
        mr,
        { id },
        `the resource is gone while protected from deletion; ${kind} ${id} is left running`,
      );
      return {};
    }
    const message =
      `the resource is protected from deletion (annotation ${DELETION_PROTECTION}: "true"): its cloud ${kind} ` +
      `${id} is not deleted. Remove the annotation to let the deletion go on (kubectl annotate ... ` +
      `${DELETION_PROTECTION}-), or set deletionPolicy: Orphan to keep the cloud object and let the resource go`;
    const before = mr.status?.conditions?.find((condition) => condition.type === 'Synced');
    if (before?.reason !== DELETION_PROTECTED)
      this.#o.events.event(mr, 'Warning', DELETION_PROTECTED, message);
    await writeStatus(this.#o, mr, statusAsIs(mr.status), [
      { type: 'Synced', status: 'False', reason: DELETION_PROTECTED, message },
    ]);
    return {};
  }

  /**
   * A skipped resource gets no cloud call and no status write, and its deletion is not held up: the
   * finalizer goes and the cloud resource is left as it is, as the user asked.
   */
  async releaseSkipped(mr: ManagedObject<unknown>): Promise<Result> {
    if (!mr.metadata.deletionTimestamp || !mr.metadata.finalizers?.includes(FINALIZER)) return {};
    await this.#release(
      mr,
      'Skipped',
      `${SKIP_RECONCILE} is set: the cloud resource is left as it is`,
      undefined,
    );
    return {};
  }

  /** Lets go of a deleted resource whose namespace may not use its account: no cloud call at all. */
  async releaseRefused(mr: ManagedObject<Spec>): Promise<Result> {
    if (!mr.metadata.finalizers?.includes(FINALIZER)) return {};
    const message =
      `namespace ${mr.metadata.namespace} may not use provider config ${accountOf(mr.spec)}: nothing in ` +
      'that account was touched for this resource, and nothing is deleted';
    await this.#release(mr, 'ProviderConfigNotAllowed', message, undefined);
    return {};
  }

  /**
   * The id to delete: the object this resource holds — the one its status records while that lives, else
   * the annotated one if the claim on it holds — or what an interrupted create may have made. Deleting a
   * resource never deletes an object it could not show was its own.
   */
  async #idForDeletion(
    mr: ManagedObject<Spec>,
    link: AccountLink<Spec, Cloud>,
    ctx: ActContext,
  ): Promise<string | undefined | 'wait'> {
    const { creation, adapter } = link;
    const held = mr.status?.id;
    const recorded = namedId(mr);
    if (held !== undefined && held !== recorded && (await isLive(held, link))) return held;
    if (recorded) {
      const claims = this.#claims;
      if (!claims.mayAdopt(mr, recorded, link) || !claims.claimVerdict(mr, recorded, undefined, link).holds)
        return undefined;
      const cloud = await cloudObjectOf(recorded, link);
      return cloud && !claims.claimVerdict(mr, recorded, cloud, link).holds ? undefined : recorded;
    }
    const intentAt = creation.intentAt(mr);
    if (intentAt === undefined) return undefined;
    const found = await creation.find(mr, intentAt, ctx);
    if (found.kind === 'wait') return 'wait';
    return found.cloud && adapter.idOf(found.cloud);
  }

  /**
   * Lets the resource go; `link` undefined when it was never connected to an account (skipped), `vanished`
   * when the apiserver has removed it already.
   */
  async #release(
    mr: ManagedObject<unknown>,
    reason: string,
    message: string,
    link: AccountLink<Spec, Cloud> | undefined,
    vanished = false,
  ): Promise<void> {
    const finalizers = (mr.metadata.finalizers ?? []).filter((f) => f !== FINALIZER);
    let alreadyGone = false;
    if (!vanished) {
      this.#onReleased(mr.metadata.uid);
      alreadyGone = await this.#o.writer.patchObject(mr, { finalizers }).then(
        () => false,
        // An earlier turn released it and this turn's copy is stale; that turn said so already.
        (error: unknown) => (isNotFound(error) ? true : Promise.reject(error)),
      );
    }
    for (const memory of this.#memories) memory.forget(mr.metadata.uid);
    const id = namedId(mr);
    if (link) {
      link.creation.forget(mr.metadata.uid);
      if (id) forgetCloud(id, link);
      link.details?.untrack(keyOf(mr));
      link.idle?.untrack(keyOf(mr));
    }
    if (alreadyGone) return;
    this.#o.events.event(mr, 'Normal', reason, message);
    logResource(this.#o.log, 'info', mr, { id }, message);
  }
}
