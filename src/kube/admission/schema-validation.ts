import type { SchemaProps, SchemaType } from './crd.ts';
import { isObject } from './decode.ts';
import { canonicalJson, type FieldError, type FieldPath, pathText } from './field-error.ts';
import { CHECKED_FORMATS } from './formats.ts';
import { re2Matches } from './re2.ts';

// The OpenAPI schema checks of a CRD as the apiserver runs them (kube-openapi's validator, converted to
// field errors by apiextensions-apiserver), and its list-type invariants (`set`, `map`): types,
// required, enum, lengths, patterns (RE2, as Go's regexp), formats, bounds, item counts. The messages
// are the apiserver's, so a refusal judged offline names the field and the limit as the cluster would.

export function schemaErrors(value: unknown, schema: SchemaProps): FieldError[] {
  const errors: FieldError[] = [];
  check(value, schema, [], [], errors);
  return errors;
}

function jsonType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

function typeMatches(type: SchemaType, value: unknown): boolean {
  switch (type) {
    case 'object':
      return isObject(value);
    case 'array':
      return Array.isArray(value);
    case 'integer':
      return typeof value === 'number' && Number.isInteger(value);
    case 'number':
      return typeof value === 'number';
    default:
      return typeof value === type;
  }
}

/** `mapKeys`: the indexes of `path` that are keys of a map (printed `.key` here, `[key]` by field.Path). */
function check(
  value: unknown,
  schema: SchemaProps,
  path: FieldPath,
  mapKeys: readonly number[],
  errors: FieldError[],
): void {
  const at = pathText(path);
  const name = at === '' ? '.' : at;
  const invalid = (detail: string) => errors.push({ type: 'Invalid value', path: at, value, detail });
  if (value === null) {
    if (schema.nullable !== true && schema.type !== undefined) {
      errors.push({
        type: 'Invalid type',
        path: at,
        value: 'null',
        detail: `${name} in body must be of type ${schema.type}: "null"`,
      });
    }
    return;
  }
  if (schema.type !== undefined && !typeMatches(schema.type, value)) {
    const actual = jsonType(value);
    errors.push({
      type: 'Invalid type',
      path: at,
      value: actual,
      detail: `${name} in body must be of type ${schema.type}: "${actual}"`,
    });
    return;
  }
  if (schema.enum !== undefined && !schema.enum.some((allowed) => deepEqual(allowed, value))) {
    const supported = schema.enum.map((allowed) =>
      typeof allowed === 'string' ? allowed : JSON.stringify(allowed),
    );
    errors.push({
      type: 'Unsupported value',
      path: at,
      value,
      detail: `supported values: ${supported.map((each) => JSON.stringify(each)).join(', ')}`,
    });
  }
  if (typeof value === 'string') {
    const length = [...value].length;
    if (schema.maxLength !== undefined && length > schema.maxLength) {
      const unit = schema.maxLength === 1 ? 'byte' : 'bytes';
      errors.push({ type: 'Too long', path: at, detail: `may not be more than ${schema.maxLength} ${unit}` });
    }
    if (schema.minLength !== undefined && length < schema.minLength) {
      invalid(`${name} in body should be at least ${schema.minLength} chars long`);
    }
    if (schema.pattern !== undefined && !re2Matches(schema.pattern, value)) {
      invalid(`${name} in body should match '${schema.pattern}'`);
    }
    const format =
      schema.format !== undefined && schema.format in CHECKED_FORMATS ? schema.format : undefined;
    if (format !== undefined && !CHECKED_FORMATS[format as keyof typeof CHECKED_FORMATS](value)) {
      errors.push({
        type: 'Invalid type',
        path: at,
        value,
        detail: `${name} in body must be of type ${format}: ${JSON.stringify(value)}`,
      });
    }
  }
  if (typeof value === 'number') {
    const { minimum, maximum, multipleOf } = schema;
    if (minimum !== undefined && (schema.exclusiveMinimum ? value <= minimum : value < minimum)) {
      invalid(
        `${name} in body should be greater than ${schema.exclusiveMinimum ? '' : 'or equal to '}${minimum}`,
      );
    }
    if (maximum !== undefined && (schema.exclusiveMaximum ? value >= maximum : value > maximum)) {
      invalid(
        `${name} in body should be less than ${schema.exclusiveMaximum ? '' : 'or equal to '}${maximum}`,
      );
    }
    if (multipleOf !== undefined && !Number.isInteger(value / multipleOf)) {
      invalid(`${name} in body should be a multiple of ${multipleOf}`);
    }
  }
  if (Array.isArray(value)) {
    if (schema.maxItems !== undefined && value.length > schema.maxItems) {
      const unit = schema.maxItems === 1 ? 'item' : 'items';
      errors.push({
        type: 'Too many',
        path: at,
        value: value.length,
        detail: `must have at most ${schema.maxItems} ${unit}`,
      });
    }
    if (schema.minItems !== undefined && value.length < schema.minItems) {
      errors.push({
        type: 'Invalid value',
        path: at,
        value: value.length,
        detail: `${name} in body should have at least ${schema.minItems} items`,
      });
    }
    const items = schema.items;
    if (items)
      for (const [index, item] of value.entries()) check(item, items, [...path, index], mapKeys, errors);
    errors.push(...listTypeErrors(value, schema, path, mapKeys));
  }
  if (isObject(value)) {
    const count = Object.keys(value).length;
    if (schema.maxProperties !== undefined && count > schema.maxProperties) {
      errors.push({
        type: 'Too many',
        path: at,
        value: count,
        detail: `must have at most ${schema.maxProperties} items`,
      });
    }
    if (schema.minProperties !== undefined && count < schema.minProperties) {
      invalid(`${name} in body should have at least ${schema.minProperties} properties`);
    }
    for (const required of schema.required ?? []) {
      if (!(required in value)) errors.push({ type: 'Required value', path: pathText([...path, required]) });
    }
    for (const [key, child] of Object.entries(value)) {
      const property = schema.properties?.[key];
      if (property !== undefined) check(child, property, [...path, key], mapKeys, errors);
      else if (schema.additionalProperties !== undefined) {
        check(child, schema.additionalProperties, [...path, key], [...mapKeys, path.length], errors);
      }
    }
  }
}

/** x-kubernetes-list-type `set` and `map`: the second of two equal items (or keys) is a duplicate. */
function listTypeErrors(
  list: readonly unknown[],
  schema: SchemaProps,
  path: FieldPath,
  mapKeys: readonly number[],
): FieldError[] {
  const type = schema['x-kubernetes-list-type'];
  if (type !== 'set' && type !== 'map') return [];
  const keyFields = schema['x-kubernetes-list-map-keys'] ?? [];
  const keys = list.map((item) =>
    type === 'set' || !isObject(item)
      ? item
      : Object.fromEntries(keyFields.filter((field) => field in item).map((field) => [field, item[field]])),
  );
  const seen = new Map<string, number>();
  const errors: FieldError[] = [];
  keys.forEach((key, index) => {
    const text = canonicalJson(key);
    const times = seen.get(text) ?? 0;
    seen.set(text, times + 1);
    if (times === 1)
      errors.push({ type: 'Duplicate value', path: pathText([...path, index], { mapKeys }), value: key });
  });
  return errors;
}

function deepEqual(a: unknown, b: unknown): boolean {
  return canonicalJson(a) === canonicalJson(b);
}
