import type { CommonSpec, ExternalKind, ManagedObject, Observation } from './external-kind.ts';

/**
 * The resource as the operator compares it with its cloud object when the spec lets the cloud own some
 * fields (`spec.ignoreDrift`, docs/design.md §8.6): each such field the kind late-initialises takes the
 * cloud's value, so no step corrects it; the others (what only drift reports) are left to `driftOf`.
 * Late initialisation ran before, on the spec as written, so it still fills them once.
 */
export function cloudOwned<Spec extends CommonSpec, Cloud>(
  mr: ManagedObject<Spec>,
  cloud: Cloud,
  adapter: Pick<ExternalKind<Spec, Cloud>, 'lateInit'>,
): ManagedObject<Spec> {
  const owned = mr.spec.ignoreDrift;
  if (!owned?.length || !adapter.lateInit) return mr;
  const values = Object.entries(adapter.lateInit.from(cloud, mr.spec)).filter(
    ([field, value]) => value !== undefined && owned.includes(field),
  );
  return values.length === 0 ? mr : { ...mr, spec: { ...mr.spec, ...Object.fromEntries(values) } };
}

/** The drifted fields the resource reports, of those its observation found: those the cloud may not own. */
export function driftOf(mr: ManagedObject<CommonSpec>, seen: Pick<Observation, 'drift'>): string[] {
  const owned = mr.spec.ignoreDrift ?? [];
  return seen.drift.filter((field) => !owned.includes(field));
}
