import type { Logger } from 'pino';
import type { Clock } from '../../lib/clock.ts';
import type { AccountLink } from '../accounts/account-links.ts';
import type { Account } from '../accounts/accounts.ts';
import { EXTERNAL_ID, namedId } from '../core/annotations.ts';
import { ReconcileError } from '../core/errors.ts';
import type { EventSink } from '../core/event-sink.ts';
import type { ActContext, CommonSpec, ManagedObject } from '../core/external-kind.ts';
import type { CloudView } from '../core/observed.ts';
import { allows } from '../core/policies.ts';
import { logResource } from '../core/resource-log.ts';
import type { ManagedStore } from '../core/store.ts';
import type { Recorded } from '../creation/creation.ts';
import { type ClaimVerdict, judgeClaim } from './claims.ts';
import { isLive, viewOf } from './cloud-view.ts';
import { lateInitFill } from './late-initialization.ts';

/** The cloud object a resource is about, seen: named and live, or just created or recovered. */
export type Seen<Cloud> = CloudView<Cloud> & {
  kind: 'seen';
  /** Just created or recovered: what recording its id wrote. */
  obtained?: Recorded;
};

/** What observing or obtaining found: the object, the named one missing, or a wait before a search. */
export type Observation<Cloud> = Seen<Cloud> | { kind: 'missing'; id: string } | { kind: 'wait'; ms: number };

export interface IdentityOptions {
  /** The kind's name, for messages. */
  kind: string;
  store: ManagedStore;
  /** Whether another account's claims count against this one's (they share an API URL). */
  links: { sameScope(account: Account, other: string): boolean };
  events: EventSink;
  clock: Clock;
  log: Logger;
}

/**
 * Which cloud object a resource is about: the one its `external-id` annotation names, if it may hold it
 * (adoption, claims, re-pointing), or the one it creates or recovers through crash-safe creation.
 */
export class Identity<Spec extends CommonSpec, Cloud> {
  readonly #o: IdentityOptions;

  constructor(options: IdentityOptions) {
    this.#o = options;
  }

  /** Without Create in its policies, a resource must name the object it observes. */
  refuseUnlessCreates(mr: ManagedObject<Spec>): void {
    if (allows(mr.spec.managementPolicies, 'Create')) return;
    throw new ReconcileError(
      'ExternalIdRequired',
      `managementPolicies do not include Create: set annotation ${EXTERNAL_ID} to the id of the cloud ${this.#o.kind} to observe`,
      { terminal: true },
    );
  }

  /**
   * Observes the object the resource names, once it may hold it, or obtains one: finds what its
   * interrupted create made, or creates it.
   */
  async observeOrObtain(
    mr: ManagedObject<Spec>,
    link: AccountLink<Spec, Cloud>,
    ctx: ActContext,
  ): Promise<Observation<Cloud>> {
    const id = namedId(mr);
    await this.#refuseRepointing(mr, id, link);
    if (id) {
      this.#refuseAdoption(mr, id, link);
      // Claims are judged only on what this account can see, so that an id of another account answers
      // as one that does not exist: a tenant learns nothing of objects outside the accounts it may use.
      const view = await viewOf(id, link, mr.status);
      if (!view || link.adapter.isGone(view.cloud)) return { kind: 'missing', id };
      this.#refuseUnlessHeld(this.claimVerdict(mr, id, view.cloud, link));
      return { kind: 'seen', ...view };
    }
    const fill =
      mr.status?.lateInitialized === undefined
        ? (cloud: Cloud) => lateInitFill(mr, cloud, link.adapter) ?? {}
        : undefined;
    const obtained = await link.creation.obtain(mr, ctx, fill);
    if (obtained.kind === 'wait') return obtained;
    const newId = link.adapter.idOf(obtained.cloud);
    link.actedAt.set(newId, link.cache.stamp());
    // What made or found the object is as new as this act: a reconcile woken by the id's own write event
    // (it may come before the write's answer) sees it without a get.
    link.cache.remember(obtained.cloud);
    const { kind } = this.#o;
    const [reason, message] = obtained.created
      ? ['Created', `created ${kind} ${newId} in the cloud`]
      : ['Recovered', `found ${kind} ${newId} made by an interrupted create and took it over`];
    this.#o.events.event(mr, 'Normal', reason, message);
    logResource(this.#o.log, 'info', mr, { id: newId }, message);
    // A create answers the whole object: only a recovered one, found in a list, needs completing.
    if (obtained.created) link.cache.rememberComplete(obtained.cloud);
    return {
      kind: 'seen',
      cloud: await link.cache.complete(obtained.cloud),
      partial: false,
      obtained: { metadata: obtained.metadata, status: obtained.status, filled: obtained.filled },
    };
  }

  /** Whether naming `id` is allowed: its own object (proved, or recorded by this process), or adoption is. */
  mayAdopt(mr: ManagedObject<Spec>, id: string, link: AccountLink<Spec, Cloud>): boolean {
    const { policy } = link.account;
    return policy.adoption || mr.status?.id === id || link.creation.recordedHere(mr.metadata.uid, id);
  }

  /**
   * Whether `mr` holds cloud object `id`; with `cloud` unknown, only what the informer cache can tell
   * (another resource proved its claim), so a refusal costs no cloud call.
   */
  claimVerdict(
    mr: ManagedObject<unknown>,
    id: string,
    cloud: Cloud | undefined,
    link: AccountLink<Spec, Cloud>,
  ): ClaimVerdict {
    const { store, links } = this.#o;
    return judgeClaim({
      uid: mr.metadata.uid,
      id,
      statusId: mr.status?.id,
      claims: store.claimsOn(id).filter((claim) => links.sameScope(link.account, claim.account)),
      marker: cloud === undefined ? undefined : link.adapter.identity?.markerOf?.(cloud),
      isLive: (uid) => store.isLive(uid),
    });
  }

  /**
   * Naming an object the resource did not make is adoption, which an account shared by several
   * namespaces refuses unless its owner allows it: a tenant could otherwise reach objects it never owned.
   */
  #refuseAdoption(mr: ManagedObject<Spec>, id: string, link: AccountLink<Spec, Cloud>): void {
    if (this.mayAdopt(mr, id, link)) return;
    const { account } = link;
    throw new ReconcileError(
      'AdoptionNotAllowed',
      `provider config ${account.name} does not allow adopting existing cloud objects: ask its owner to set ` +
        `spec.adoption: Allowed, and this resource is looked at again as soon as the provider config changes ` +
        `(removing annotation ${EXTERNAL_ID} would not adopt ${id}: it would create a second, separately billed object)`,
      { terminal: true },
    );
  }

  #refuseUnlessHeld(verdict: ClaimVerdict): void {
    if (verdict.holds) return;
    throw new ReconcileError(
      'AlreadyManaged',
      `the ${this.#o.kind} named by annotation ${EXTERNAL_ID} cannot be managed by this resource: ` +
        `${verdict.reason}. A cloud object is managed by one resource only: point the annotation at an object ` +
        'no other resource holds, or delete this resource (removing the annotation would create a new, billed object)',
      { terminal: true },
    );
  }

  /**
   * The object a resource holds (its status id) stays its own while it lives: pointing the annotation
   * elsewhere, or removing it, would leave that object running and billed with nobody managing it. Once
   * it is gone, a new id is how a replacement or another adoption begins.
   */
  async #refuseRepointing(
    mr: ManagedObject<Spec>,
    id: string | undefined,
    link: AccountLink<Spec, Cloud>,
  ): Promise<void> {
    const held = mr.status?.id;
    if (held === undefined || held === id || !(await isLive(held, link))) return;
    const change = id === undefined ? 'was removed' : `was changed to ${id}`;
    throw new ReconcileError(
      'ExternalIdChanged',
      `annotation ${EXTERNAL_ID} ${change} while this resource still manages ${this.#o.kind} ${held}; ` +
        `set it back to ${held}, or delete the resource (its deletionPolicy applies to ${held})`,
      { terminal: true },
    );
  }
}
