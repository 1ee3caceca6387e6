import type { Clock } from '../lib/clock.ts';
import type { AccountLink } from './account-links.ts';
import { FINALIZER } from './annotations.ts';
import type { Recorded } from './creation.ts';
import type { CommonSpec, ExternalKind, ManagedObject } from './external-kind.ts';
import { allows } from './policies.ts';
import type { ManagedWriter, ObjectPatch } from './writer.ts';

/** The resource once it holds its object: its effective spec, and which fields late initialisation filled. */
export interface Holding<Spec> {
  mr: ManagedObject<Spec>;
  lateInitialized: string[] | undefined;
}

/** The object a resource observes, and, when it was just created or recovered, what recording its id wrote. */
export interface ObservedObject<Cloud> {
  cloud: Cloud;
  obtained?: Recorded | undefined;
}

/** How long what late initialisation filled is remembered at most (see `LateInitialization`). */
const INITIALIZED_MEMORY_MS = 60_000;

/**
 * Late initialisation (docs/design.md §8.1): the spec fields a user left out, filled once from the cloud
 * object in the write that makes the resource hold it, and the memory of what was filled.
 */
export class LateInitialization<Spec extends CommonSpec, Cloud> {
  readonly #writer: ManagedWriter;
  /**
   * What late initialisation filled, by uid, until a copy with the status that records it is read, or for
   * a minute at most: a reconcile reading a copy from before that status write (the spec write's watch
   * event can wake it first) must not take the filled fields for the user's and record none. In order of
   * filling, so expired entries are at the front.
   */
  readonly #initialized = new Map<string, { fields: Record<string, unknown>; at: number }>();

  readonly #clock: Clock;

  constructor(writer: ManagedWriter, clock: Clock) {
    this.#writer = writer;
    this.#clock = clock;
  }

  /**
   * Makes the resource hold the object it observes: the finalizer, when a named resource has none yet,
   * and the late-initialised spec fields, in one write. Answers the resource with its effective spec —
   * a late-initialised field removed since takes its cleared value — and the fields filled.
   */
  async takeHold(
    mr: ManagedObject<Spec>,
    observed: ObservedObject<Cloud>,
    link: AccountLink<Spec, Cloud>,
  ): Promise<Holding<Spec>> {
    const { lateInit } = link.adapter;
    const { uid } = mr.metadata;
    const recorded = mr.status?.lateInitialized;
    if (recorded !== undefined) this.#initialized.delete(uid);
    // Filled by this process, and the copy read may be older than that write.
    let filled = recorded === undefined ? this.#initialized.get(uid)?.fields : undefined;
    if (observed.obtained?.filled) filled = observed.obtained.filled;
    let metadata = observed.obtained?.metadata ?? mr.metadata;
    const status = observed.obtained ? observed.obtained.status : mr.status;
    // What was just obtained went through the create intent, which wrote the finalizer.
    if (!observed.obtained && recorded === undefined && filled === undefined) {
      const fill = lateInitFill(mr, observed.cloud, link.adapter);
      const finalizers = metadata.finalizers ?? [];
      const patch: ObjectPatch = { ifUnchanged: true };
      if (!finalizers.includes(FINALIZER)) patch.finalizers = [...finalizers, FINALIZER];
      if (fill && Object.keys(fill).length > 0) patch.spec = fill;
      if (patch.finalizers || patch.spec) metadata = await this.#writer.patchObject(mr, patch);
      filled = fill;
    } else if (!observed.obtained && !metadata.finalizers?.includes(FINALIZER)) {
      metadata = await this.#writer.patchObject(mr, {
        finalizers: [...(metadata.finalizers ?? []), FINALIZER],
      });
    }
    if (filled !== undefined && recorded === undefined && !this.#initialized.has(uid)) {
      this.#initialized.set(uid, { fields: filled, at: this.#clock.now() });
    }
    const initialized = recorded ?? (filled && Object.keys(filled).sort());
    const spec: Spec =
      initialized !== undefined && lateInit
        ? { ...lateInit.cleared, ...(recorded === undefined ? filled : {}), ...mr.spec }
        : mr.spec;
    return { mr: { ...mr, metadata, status, spec }, lateInitialized: initialized };
  }

  /**
   * Called once a status recording what was filled is written: a copy older than that write is a matter
   * of milliseconds, not a minute, so memories past the minute go.
   */
  forgetExpired(): void {
    const cutoff = this.#clock.now() - INITIALIZED_MEMORY_MS;
    for (const [uid, entry] of this.#initialized) {
      if (entry.at >= cutoff) return;
      this.#initialized.delete(uid);
    }
  }

  forget(uid: string): void {
    this.#initialized.delete(uid);
  }
}

/** The spec fields late initialisation fills from `cloud`: those `mr` leaves out; none when not allowed. */
export function lateInitFill<Spec extends CommonSpec, Cloud>(
  mr: ManagedObject<Spec>,
  cloud: Cloud,
  adapter: ExternalKind<Spec, Cloud>,
): Record<string, unknown> | undefined {
  const { lateInit } = adapter;
  if (!lateInit || !allows(mr.spec.managementPolicies, 'LateInitialize')) return undefined;
  const spec = mr.spec as Record<string, unknown>;
  return Object.fromEntries(
    Object.entries(lateInit.from(cloud, mr.spec)).filter(
      ([field, value]) => value !== undefined && spec[field] === undefined,
    ),
  );
}
