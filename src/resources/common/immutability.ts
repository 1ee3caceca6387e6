import { z } from 'zod';
import { type CelRule, withRules } from '../../kube/schema-meta.ts';

/**
 * Makes every field of a spec immutable except those listed as mutable, so that a field added later
 * is immutable unless someone decides otherwise. Returns the shape, each immutable field carrying its
 * own `self == oldSelf` rule and "Immutable." appended to its description, and the rules to attach to
 * the spec object.
 *
 * Fields in `settableOnce` are late-initialised: they may be added while absent, then never changed.
 *
 * A rule on an optional field only runs when the field exists both before and after the update, so
 * adding or removing it is checked on the spec, which only asks whether it is there. The value itself is
 * compared on the field because every field a spec rule reads costs the apiserver a copy of the spec's
 * whole property table (apiextensions-apiserver's CEL values, as of Kubernetes 1.36): with each value
 * compared on the spec, CEL was a quarter of the apiserver's CPU for a GpuPod write, most of it in those
 * copies, and this cut the apiserver's CPU for a burst of GpuPods by about 8%.
 */
export function immutableExcept<S extends Record<string, z.ZodType>>(
  kind: string,
  shape: S,
  mutable: ReadonlyArray<keyof S & string>,
  settableOnce: ReadonlyArray<keyof S & string> = [],
): { shape: S; rules: CelRule[] } {
  const keep = new Set<string>(mutable);
  const once = new Set<string>(settableOnce);
  const annotated: Record<string, z.ZodType> = { ...shape };
  const rules: CelRule[] = [];
  for (const [field, schema] of Object.entries(shape)) {
    if (keep.has(field)) continue;
    const message = once.has(field)
      ? `${field} is immutable once set: delete and recreate the ${kind} to change it`
      : `${field} is immutable: delete and recreate the ${kind} to change it`;
    annotated[field] = markImmutable(kind, field, schema, { rule: 'self == oldSelf', message });
    const presence = once.has(field)
      ? `!has(oldSelf.${field}) || has(self.${field})`
      : `has(self.${field}) == has(oldSelf.${field})`;
    if (schema.isOptional()) rules.push({ rule: presence, message, fieldPath: `.${field}` });
  }
  // `.describe()` returns a schema of the same type, so the annotated shape is still an S.
  return { shape: annotated as S, rules };
}

function markImmutable(kind: string, field: string, schema: z.ZodType, rule: CelRule): z.ZodType {
  const description = descriptionOf(schema);
  if (description === undefined) throw new Error(`${kind} spec.${field} has no description`);
  return withFieldRule(schema, rule).describe(
    `${description} Immutable: delete and recreate the ${kind} to change it.`,
  );
}

// A rule set on `.optional()` or `.default()` would replace the rules of the schema inside, so it goes
// inside, and the wrapper is made again around it.
function withFieldRule(schema: z.core.$ZodType, rule: CelRule): z.ZodType {
  if (schema instanceof z.ZodOptional) return withFieldRule(schema.unwrap(), rule).optional();
  if (schema instanceof z.ZodDefault)
    return withFieldRule(schema.unwrap(), rule).default(schema.def.defaultValue);
  if (!(schema instanceof z.ZodType)) throw new Error('immutableExcept takes zod schemas');
  return withRules(schema, [rule]);
}

// `.optional()` and `.default()` wrap a schema without copying its description.
function descriptionOf(schema: z.core.$ZodType): string | undefined {
  const own = z.globalRegistry.get(schema)?.description;
  if (own !== undefined) return own;
  if (schema instanceof z.ZodOptional || schema instanceof z.ZodDefault)
    return descriptionOf(schema.unwrap());
  return undefined;
}
