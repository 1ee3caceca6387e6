import { z } from 'zod';
import type { CelRule } from '../../kube/schema-meta.ts';

/**
 * Makes every field of a spec immutable except those listed as mutable, so that a field added later
 * is immutable unless someone decides otherwise. Returns the shape with "Immutable." appended to
 * each immutable field's description, and the transition rules to attach to the spec object.
 *
 * Fields in `settableOnce` are late-initialised: they may be added while absent, then never changed.
 *
 * The rules sit on the spec rather than on each field because a rule on an optional field only
 * runs when the field exists both before and after the update: adding or removing it would slip
 * through.
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
    annotated[field] = markImmutable(kind, field, schema);
    rules.push(once.has(field) ? setOnceRule(kind, field) : transitionRule(kind, field, schema));
  }
  // `.describe()` returns a schema of the same type, so the annotated shape is still an S.
  return { shape: annotated as S, rules };
}

function markImmutable(kind: string, field: string, schema: z.ZodType): z.ZodType {
  const description = descriptionOf(schema);
  if (description === undefined) throw new Error(`${kind} spec.${field} has no description`);
  return schema.describe(`${description} Immutable: delete and recreate the ${kind} to change it.`);
}

function transitionRule(kind: string, field: string, schema: z.ZodType): CelRule {
  const unchanged = `self.${field} == oldSelf.${field}`;
  return {
    rule: schema.isOptional()
      ? `has(self.${field}) == has(oldSelf.${field}) && (!has(self.${field}) || ${unchanged})`
      : unchanged,
    message: `${field} is immutable: delete and recreate the ${kind} to change it`,
    fieldPath: `.${field}`,
  };
}

/** A late-initialised field: the operator (or a user) may set it once, when it is left out. */
function setOnceRule(kind: string, field: string): CelRule {
  return {
    rule: `!has(oldSelf.${field}) || (has(self.${field}) && self.${field} == oldSelf.${field})`,
    message: `${field} is immutable once set: delete and recreate the ${kind} to change it`,
    fieldPath: `.${field}`,
  };
}

// `.optional()` and `.default()` wrap a schema without copying its description.
function descriptionOf(schema: z.core.$ZodType): string | undefined {
  const own = z.globalRegistry.get(schema)?.description;
  if (own !== undefined) return own;
  if (schema instanceof z.ZodOptional || schema instanceof z.ZodDefault)
    return descriptionOf(schema.unwrap());
  return undefined;
}
