import { z } from 'zod';
import type { CelRule } from '../../src/kube/schema-meta.ts';

/** A schema the generator cannot turn into a valid structural CRD schema; names the offending field. */
export class CrdSchemaError extends Error {
  readonly field: string;
  constructor(field: string, problem: string) {
    super(`${field}: ${problem}`);
    this.name = 'CrdSchemaError';
    this.field = field;
  }
}

const celRuleSchema = z.strictObject({
  rule: z.string().min(1),
  message: z.string().min(1),
  fieldPath: z.string().optional(),
  reason: z
    .enum(['FieldValueInvalid', 'FieldValueForbidden', 'FieldValueRequired', 'FieldValueDuplicate'])
    .optional(),
}) satisfies z.ZodType<CelRule>;

// Formats the apiserver knows; zod may emit others (e.g. for .startsWith()) that it would ignore.
const FORMATS = [
  'int32',
  'int64',
  'float',
  'double',
  'byte',
  'date',
  'date-time',
  'duration',
  'uri',
  'email',
  'hostname',
  'ipv4',
  'ipv6',
  'cidr',
  'mac',
  'uuid',
] as const;

// The subset of what z.toJSONSchema emits (OpenAPI 3.0 flavour) that a structural schema may hold.
// A strict object, so any other keyword (anyOf, oneOf, $ref, nullable, ...) fails with its name.
// Its key order is the key order of the generated YAML.
const jsonSchemaNode = z.strictObject({
  description: z.string().optional(),
  type: z.enum(['object', 'array', 'string', 'integer', 'number', 'boolean']).optional(),
  format: z.enum(FORMATS).optional(),
  enum: z.array(z.union([z.string(), z.number(), z.boolean()])).optional(),
  default: z.unknown().optional(),
  minimum: z.number().optional(),
  exclusiveMinimum: z.boolean().optional(),
  maximum: z.number().optional(),
  exclusiveMaximum: z.boolean().optional(),
  multipleOf: z.number().optional(),
  minLength: z.int().optional(),
  maxLength: z.int().optional(),
  pattern: z.string().optional(),
  minItems: z.int().optional(),
  maxItems: z.int().optional(),
  'x-kubernetes-list-type': z.enum(['atomic', 'set', 'map']).optional(),
  'x-kubernetes-list-map-keys': z.array(z.string()).min(1).optional(),
  'x-kubernetes-preserve-unknown-fields': z.literal(true).optional(),
  items: z.unknown().optional(),
  required: z.array(z.string()).optional(),
  properties: z.record(z.string(), z.unknown()).optional(),
  additionalProperties: z.unknown().optional(),
  'x-kubernetes-validations': z.array(celRuleSchema).optional(),
});

type JsonSchemaNode = z.output<typeof jsonSchemaNode>;
const KEY_ORDER = jsonSchemaNode.keyof().options;

/** An OpenAPI v3 schema the apiserver accepts as structural (every node typed, no unions, no refs). */
export type StructuralSchema = Omit<JsonSchemaNode, 'items' | 'properties' | 'additionalProperties'> & {
  items?: StructuralSchema;
  properties?: Record<string, StructuralSchema>;
  additionalProperties?: StructuralSchema;
};

/**
 * Converts a zod schema to a structural schema for a CRD. `field` names the schema in errors
 * (e.g. `GpuPod.spec`). Every property must have a description, so that `kubectl explain`
 * documents the whole API.
 */
export function toStructuralSchema(schema: z.ZodType, field: string): StructuralSchema {
  const json = z.toJSONSchema(schema, {
    target: 'openapi-3.0',
    io: 'input',
    reused: 'inline',
    cycles: 'throw',
    unrepresentable: 'throw',
  });
  return convert(json, field, true);
}

// Properties must be described; list items and map values may lean on their field's description.
function convert(raw: unknown, field: string, mustDescribe: boolean): StructuralSchema {
  const parsed = jsonSchemaNode.safeParse(raw);
  if (!parsed.success) throw new CrdSchemaError(field, z.prettifyError(parsed.error));
  const { items, properties, additionalProperties, ...node } = parsed.data;
  if (mustDescribe && node.description === undefined) {
    throw new CrdSchemaError(field, 'no description: add .describe() so that kubectl explain documents it');
  }
  if (node.type === undefined && !node['x-kubernetes-preserve-unknown-fields'])
    throw new CrdSchemaError(field, 'no type: a structural schema types every node');
  const result: StructuralSchema = { ...node, ...numberRange(node) };
  // zod spells out its own regex for date-time; the apiserver checks the format itself.
  if (node.format === 'date-time') delete result.pattern;
  if (items !== undefined) result.items = convert(items, `${field}[]`, false);
  if (properties !== undefined) {
    result.properties = Object.fromEntries(
      Object.entries(properties).map(([name, child]) => [name, convert(child, `${field}.${name}`, true)]),
    );
  }
  // Free-form: the apiserver keeps whatever it holds, so its values have no schema.
  const values = node['x-kubernetes-preserve-unknown-fields']
    ? undefined
    : mapValues(additionalProperties, field, properties !== undefined);
  if (values !== undefined) result.additionalProperties = values;
  return inKeyOrder(result);
}

/**
 * Integers state their width, as the Kubernetes API conventions ask. The ±2^53 bounds zod gives
 * every z.int() are dropped: they describe JavaScript numbers, not the API.
 */
function numberRange(node: JsonSchemaNode): Pick<JsonSchemaNode, 'minimum' | 'maximum' | 'format'> {
  if (node.type !== 'integer') return {};
  const minimum = node.minimum === Number.MIN_SAFE_INTEGER ? undefined : node.minimum;
  const maximum = node.maximum === Number.MAX_SAFE_INTEGER ? undefined : node.maximum;
  const fits32 = (minimum ?? -Infinity) >= -(2 ** 31) && (maximum ?? Infinity) <= 2 ** 31 - 1;
  return { minimum, maximum, format: node.format ?? (fits32 ? 'int32' : 'int64') };
}

function mapValues(additional: unknown, field: string, hasProperties: boolean): StructuralSchema | undefined {
  // z.object() may say additionalProperties: false; the apiserver prunes unknown fields anyway.
  if (additional === undefined || additional === false) return undefined;
  if (hasProperties)
    throw new CrdSchemaError(field, 'an object has either properties or a value schema, not both');
  if (additional === true)
    throw new CrdSchemaError(field, 'a map needs a value schema: z.record(z.string(), value)');
  return convert(additional, `${field}{}`, false);
}

// Fixed key order (and no undefined values) keeps the generated YAML readable and stable.
function inKeyOrder(schema: StructuralSchema): StructuralSchema {
  const ordered: StructuralSchema = {};
  for (const key of KEY_ORDER) {
    if (schema[key] !== undefined) Object.assign(ordered, { [key]: schema[key] });
  }
  return ordered;
}
