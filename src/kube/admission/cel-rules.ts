import { type CelInput, CelScalar, celEnv, isCelError, parse, plan } from '@bufbuild/cel';
import type { CelRule, SchemaProps } from './crd.ts';
import { isObject, type JsonObject } from './decode.ts';
import type { FieldError, FieldPath } from './field-error.ts';
import { pathText } from './field-error.ts';

// The CRDs' own x-kubernetes-validations, evaluated on a create as the apiserver evaluates them
// (apiextensions-apiserver's schema/cel): each rule runs on every value present at its schema node
// (each item of a list, each value of a map), with `self` typed by the schema (integer fields as CEL
// ints, number fields as doubles); at the root `self.metadata` holds only name and generateName. Rules
// that read `oldSelf` are transition rules: on a create there is no old object, so they do not run.
//
// The evaluator is @bufbuild/cel with CEL's standard library. Our rules use only that (has, size, in,
// exists, all, startsWith, matches, the ternary); the Kubernetes CEL libraries (isURL, quantity, ...)
// are not here, and the test of this module fails on a rule that calls a function outside
// STANDARD_FUNCTIONS, instead of a user's plan passing over it.

/** The functions, macros and operators of standard CEL our rules may call, by their AST names. */
export const STANDARD_FUNCTIONS: ReadonlySet<string> = new Set([
  'has',
  'size',
  'exists',
  'all',
  'exists_one',
  'map',
  'filter',
  'startsWith',
  'endsWith',
  'contains',
  'matches',
  '@in',
  '@not_strictly_false',
  '_==_',
  '_!=_',
  '_<_',
  '_<=_',
  '_>_',
  '_>=_',
  '_&&_',
  '_||_',
  '!_',
  '_?_:_',
  '_+_',
  '_-_',
  '_*_',
  '_/_',
  '_%_',
  '-_',
  '_[_]',
]);

const env = celEnv({ variables: { self: CelScalar.DYN } });

interface CompiledRule {
  readonly rule: CelRule;
  readonly run: (bindings: { self: CelInput }) => unknown;
  readonly usesOldSelf: boolean;
  /** The functions the rule calls, for the test that keeps them within STANDARD_FUNCTIONS. */
  readonly functions: ReadonlySet<string>;
}

const compiled = new WeakMap<SchemaProps, readonly CompiledRule[]>();

/** The rules of one schema node, parsed and planned once. */
export function compiledRules(schema: SchemaProps): readonly CompiledRule[] {
  let rules = compiled.get(schema);
  if (rules === undefined) {
    rules = (schema['x-kubernetes-validations'] ?? []).map((rule) => {
      const parsed = parse(rule.rule);
      const { identifiers, functions } = namesIn(parsed);
      return { rule, run: plan(env, parsed), usesOldSelf: identifiers.has('oldSelf'), functions };
    });
    compiled.set(schema, rules);
  }
  return rules;
}

/**
 * The identifiers and called functions of a parsed expression, macros included (the parser expands
 * `exists` and `has` but keeps the calls they came from in `sourceInfo.macroCalls`).
 */
function namesIn(parsed: object): { identifiers: Set<string>; functions: Set<string> } {
  const identifiers = new Set<string>();
  const functions = new Set<string>();
  const visit = (node: unknown): void => {
    if (typeof node !== 'object' || node === null) return;
    const { case: kind, value } = node as { case?: unknown; value?: unknown };
    if (kind === 'identExpr' && isObject(value) && typeof value.name === 'string')
      identifiers.add(value.name);
    if (kind === 'callExpr' && isObject(value) && typeof value.function === 'string')
      functions.add(value.function);
    for (const inner of node instanceof Map ? node.values() : Object.values(node)) visit(inner);
  };
  visit(parsed);
  return { identifiers, functions };
}

/** The failures of every rule the schema carries, for a create of `object` (already decoded). */
export function ruleErrors(object: JsonObject, schema: SchemaProps): FieldError[] {
  const errors: FieldError[] = [];
  validate(object, schema, [], [], true, errors);
  return errors;
}

function validate(
  value: unknown,
  schema: SchemaProps,
  path: FieldPath,
  mapKeys: readonly number[],
  root: boolean,
  errors: FieldError[],
): void {
  if (value === null || value === undefined) return;
  const rules = compiledRules(schema).filter((rule) => !rule.usesOldSelf);
  if (rules.length > 0) {
    const self = root ? rootValue(value, schema) : celValue(value, schema);
    for (const { rule, run } of rules) {
      const result = run({ self });
      if (result === true) continue;
      const at = pathText(path, { mapKeys });
      if (isCelError(result)) {
        errors.push({
          type: 'Invalid value',
          path: at,
          value: schema.type,
          detail: `${result.message} evaluating rule: ${ruleText(rule)}`,
        });
        continue;
      }
      errors.push(failure(rule, [...path, ...fieldPathOf(rule)], mapKeys, value, schema));
    }
  }
  if (Array.isArray(value) && schema.items) {
    const items = schema.items;
    for (const [index, item] of value.entries())
      validate(item, items, [...path, index], mapKeys, false, errors);
  }
  if (isObject(value)) {
    for (const [key, child] of Object.entries(value)) {
      const property = schema.properties?.[key];
      if (property !== undefined) validate(child, property, [...path, key], mapKeys, false, errors);
      else if (schema.additionalProperties !== undefined) {
        validate(
          child,
          schema.additionalProperties,
          [...path, key],
          [...mapKeys, path.length],
          false,
          errors,
        );
      }
    }
  }
}

function ruleText(rule: CelRule): string {
  return (rule.message ?? rule.rule).trim();
}

function failure(
  rule: CelRule,
  path: FieldPath,
  mapKeys: readonly number[],
  value: unknown,
  schema: SchemaProps,
): FieldError {
  const at = pathText(path, { mapKeys });
  const detail = rule.message?.trim() || `failed rule: ${ruleText(rule)}`;
  switch (rule.reason) {
    case 'FieldValueRequired':
      return { type: 'Required value', path: at, detail };
    case 'FieldValueForbidden':
      return { type: 'Forbidden', path: at, detail };
    case 'FieldValueDuplicate':
      return { type: 'Duplicate value', path: at, value };
    default:
      // The apiserver shows a scalar's value, not an object's or a list's.
      return schema.type === 'object' || schema.type === 'array'
        ? { type: 'Invalid value', path: at, detail }
        : { type: 'Invalid value', path: at, value, detail };
  }
}

/** `.spec.name`, `.a['b.c']` as path segments. */
function fieldPathOf(rule: CelRule): FieldPath {
  const segments: string[] = [];
  for (const match of (rule.fieldPath ?? '').matchAll(/\.([^.[]+)|\['((?:[^'\\]|\\.)*)'\]/g)) {
    segments.push(match[1] ?? match[2] ?? '');
  }
  return segments;
}

/** The root object as a rule sees it: ObjectMeta reduced to name and generateName. */
function rootValue(value: unknown, schema: SchemaProps): CelInput {
  if (!isObject(value)) return celValue(value, schema);
  const { metadata, ...rest } = value;
  const meta = isObject(metadata) ? metadata : {};
  const visible = Object.fromEntries(
    ['name', 'generateName']
      .filter((key) => typeof meta[key] === 'string')
      .map((key) => [key, meta[key] as string]),
  );
  return { ...(celValue(rest, schema) as Record<string, CelInput>), metadata: visible };
}

/** A JSON value as a CEL value of its schema's type: integers as CEL ints (bigint), numbers as doubles. */
function celValue(value: unknown, schema: SchemaProps | undefined): CelInput {
  if (typeof value === 'number') {
    const integer = schema?.type === 'integer' || (schema?.type === undefined && Number.isInteger(value));
    return integer && Number.isInteger(value) ? BigInt(value) : value;
  }
  if (Array.isArray(value)) return value.map((item) => celValue(item, schema?.items));
  if (isObject(value)) {
    return Object.fromEntries(
      Object.entries(value).map(([key, child]) => [
        key,
        celValue(child, schema?.properties?.[key] ?? schema?.additionalProperties),
      ]),
    );
  }
  return value as CelInput;
}
