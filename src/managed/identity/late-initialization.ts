import type { AccountLink } from '../accounts/account-links.ts';
import { FINALIZER, LATE_INITIALIZED } from '../core/annotations.ts';
import type { CommonSpec, ExternalKind, ManagedObject } from '../core/external-kind.ts';
import { allows } from '../core/policies.ts';
import type { StatusContributor } from '../core/status-contribution.ts';
import type { ManagedWriter, ObjectPatch } from '../core/writer.ts';
import type { Recorded } from '../creation/creation.ts';

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

/**
 * Late initialisation (docs/design.md §8.1): the spec fields a user left out, filled once from the cloud
 * object in the write that makes the resource hold it, with the record of which (annotation
 * `gpucloud.io/late-initialized`) in that same write: the record lives with the fill, so neither a crash
 * nor a copy read before the status caught up can take the filled fields for the user's.
 */
export class LateInitialization<Spec extends CommonSpec, Cloud> {
  readonly #writer: ManagedWriter;

  constructor(writer: ManagedWriter) {
    this.#writer = writer;
  }

  /**
   * Makes the resource hold the object it observes: the finalizer, when a named resource has none yet,
   * and the late-initialised spec fields with their record, in one write. Answers the resource with its
   * effective spec — a late-initialised field removed since takes its cleared value — and the fields filled.
   */
  async takeHold(
    mr: ManagedObject<Spec>,
    observed: ObservedObject<Cloud>,
    link: AccountLink<Spec, Cloud>,
  ): Promise<Holding<Spec>> {
    const { lateInit } = link.adapter;
    const recorded = mr.status?.lateInitialized ?? recordIn(mr.metadata.annotations);
    let filled = observed.obtained?.filled;
    let metadata = observed.obtained?.metadata ?? mr.metadata;
    const status = observed.obtained ? observed.obtained.status : mr.status;
    // What was just obtained went through the create intent, which wrote the finalizer.
    if (!observed.obtained && recorded === undefined) {
      const fill = lateInitFill(mr, observed.cloud, link.adapter);
      const finalizers = metadata.finalizers ?? [];
      const patch: ObjectPatch = { ifUnchanged: true };
      if (!finalizers.includes(FINALIZER)) patch.finalizers = [...finalizers, FINALIZER];
      if (fill && Object.keys(fill).length > 0) {
        patch.spec = fill;
        patch.annotations = { [LATE_INITIALIZED]: Object.keys(fill).sort().join(',') };
      }
      if (patch.finalizers || patch.spec || patch.annotations)
        metadata = await this.#writer.patchObject(mr, patch);
      filled = fill;
    } else if (!observed.obtained && !metadata.finalizers?.includes(FINALIZER)) {
      metadata = await this.#writer.patchObject(mr, {
        finalizers: [...(metadata.finalizers ?? []), FINALIZER],
      });
    }
    const initialized = recorded ?? (filled && Object.keys(filled).sort());
    const spec: Spec =
      initialized !== undefined && lateInit ? { ...lateInit.cleared, ...filled, ...mr.spec } : mr.spec;
    return { mr: { ...mr, metadata, status, spec }, lateInitialized: initialized };
  }
}

/** The fields the record annotation names; undefined when there is none. */
function recordIn(annotations: Record<string, string> | undefined): string[] | undefined {
  const text = annotations?.[LATE_INITIALIZED];
  if (text === undefined) return undefined;
  return text === '' ? [] : text.split(',').sort();
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

/** Late initialisation's part of a report: the record of the fields it filled. */
export function lateInitReport<Spec, Cloud>({
  lateInitialized,
}: Holding<Spec>): StatusContributor<Spec, Cloud> {
  return () => ({ fields: { lateInitialized } });
}
