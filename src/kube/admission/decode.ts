import type { SchemaProps } from './crd.ts';
import { type FieldPath, pathText } from './field-error.ts';

// What the apiserver does to a custom resource's body before it validates it: with
// fieldValidation=Strict, a field the schema does not know is an error (400, before any validation);
// a null where the schema does not allow one is dropped; then the schema's defaults fill what is
// missing. Works on a copy made as the wire makes one (JSON: an undefined field is no field).

/** The fields of ObjectMeta: strict decoding refuses any other under `metadata`. */
const OBJECT_META_FIELDS: ReadonlySet<string> = new Set([
  'name',
  'generateName',
  'namespace',
  'selfLink',
  'uid',
  'resourceVersion',
  'generation',
  'creationTimestamp',
  'deletionTimestamp',
  'deletionGracePeriodSeconds',
  'labels',
  'annotations',
  'ownerReferences',
  'finalizers',
  'managedFields',
]);

export type JsonObject = Record<string, unknown>;

export function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export interface Decoded {
  readonly object: JsonObject;
  /** `unknown field "spec.x"`, as strict decoding words each. */
  readonly unknownFields: readonly string[];
}

export function decode(object: JsonObject, schema: SchemaProps): Decoded {
  const copy = JSON.parse(JSON.stringify(object)) as JsonObject;
  const unknownFields: string[] = [];
  const metadata = copy.metadata;
  if (isObject(metadata)) {
    for (const key of Object.keys(metadata)) {
      if (!OBJECT_META_FIELDS.has(key)) unknownFields.push(`unknown field "metadata.${key}"`);
    }
  }
  walk(copy, schema, [], unknownFields);
  return { object: copy, unknownFields };
}

function walk(value: unknown, schema: SchemaProps, path: FieldPath, unknown: string[]): void {
  if (Array.isArray(value)) {
    const items = schema.items;
    if (items) for (const [index, item] of value.entries()) walk(item, items, [...path, index], unknown);
    return;
  }
  if (!isObject(value)) return;
  // ObjectMeta is decoded as ObjectMeta, not by the CRD's schema.
  if (path.length === 1 && path[0] === 'metadata') return;
  const preserve = schema['x-kubernetes-preserve-unknown-fields'] === true;
  for (const key of Object.keys(value)) {
    const child = schema.properties?.[key] ?? schema.additionalProperties;
    if (child === undefined) {
      if (preserve) continue;
      unknown.push(`unknown field "${pathText([...path, key])}"`);
      delete value[key];
      continue;
    }
    if (value[key] === null && child.nullable !== true) {
      delete value[key];
      continue;
    }
    walk(value[key], child, [...path, key], unknown);
  }
  for (const [key, child] of Object.entries(schema.properties ?? {})) {
    if (!(key in value) && child.default !== undefined) value[key] = structuredClone(child.default);
  }
}
