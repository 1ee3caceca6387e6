import type { z } from 'zod';

/**
 * A CEL validation rule of a CRD schema node (`x-kubernetes-validations`). A message is required
 * here although the apiserver makes it optional: without one a user sees the raw CEL expression.
 */
export interface CelRule {
  readonly rule: string;
  readonly message: string;
  /** Where the apiserver reports the failure, relative to the node carrying the rule, e.g. `.gpuType`. */
  readonly fieldPath?: string;
  readonly reason?:
    | 'FieldValueInvalid'
    | 'FieldValueForbidden'
    | 'FieldValueRequired'
    | 'FieldValueDuplicate';
}

// The Kubernetes extensions our schemas carry through `.meta()`; z.toJSONSchema copies them into the
// JSON Schema it emits and the CRD generator validates and keeps them.
declare module 'zod' {
  interface GlobalMeta {
    'x-kubernetes-validations'?: CelRule[];
    'x-kubernetes-list-type'?: 'atomic' | 'set' | 'map';
    'x-kubernetes-list-map-keys'?: string[];
    'x-kubernetes-preserve-unknown-fields'?: true;
  }
}

/** A list whose items are identified by `keys`: the apiserver rejects duplicates and merges per item. */
export function listMap<T extends z.ZodType>(list: T, keys: readonly string[]): T {
  return list.meta({ 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': [...keys] });
}

/**
 * Attaches CEL rules to a schema node, keeping the rules it already had. Apply it before
 * `.optional()` or `.default()`: rules set on such a wrapper replace those of the schema inside.
 */
export function withRules<T extends z.ZodType>(schema: T, rules: readonly CelRule[]): T {
  const existing = schema.meta()?.['x-kubernetes-validations'] ?? [];
  return schema.meta({ 'x-kubernetes-validations': [...existing, ...rules] });
}

/**
 * Free-form JSON (a task's input or output), kept as it is. An object in the CRD, so CEL can see that it
 * is there and compare it; an untyped node is invisible to CEL.
 */
export function anyJson<T extends z.ZodType>(schema: T): T {
  return schema.meta({ 'x-kubernetes-preserve-unknown-fields': true });
}
