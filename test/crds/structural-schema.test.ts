import assert from 'node:assert/strict';
import { test } from 'node:test';
import { z } from 'zod';
import { listMap, withRules } from '../../src/kube/schema-meta.ts';
import { CrdSchemaError, toStructuralSchema } from '../../tools/crd/structural-schema.ts';

const described = <T extends z.ZodType>(schema: T) => schema.describe('a field');

test('objects, lists, maps, enums and defaults become a structural schema', () => {
  const schema = z
    .object({
      count: described(z.int32().min(1)),
      size: described(z.int().min(0)),
      price: described(z.number().positive()),
      mode: described(z.enum(['A', 'B']).default('A')),
      tags: described(z.array(z.string().max(8)).max(4)),
      labels: described(z.record(z.string(), z.string())),
      at: described(z.iso.datetime().optional()),
    })
    .describe('root');
  assert.deepEqual(toStructuralSchema(schema, 'T'), {
    description: 'root',
    type: 'object',
    required: ['count', 'size', 'price', 'tags', 'labels'],
    properties: {
      count: { description: 'a field', type: 'integer', format: 'int32', minimum: 1, maximum: 2147483647 },
      // The ±2^53 bounds zod puts on every z.int() describe JavaScript numbers, not the API.
      size: { description: 'a field', type: 'integer', format: 'int64', minimum: 0 },
      price: { description: 'a field', type: 'number', minimum: 0, exclusiveMinimum: true },
      mode: { description: 'a field', type: 'string', enum: ['A', 'B'], default: 'A' },
      tags: { description: 'a field', type: 'array', maxItems: 4, items: { type: 'string', maxLength: 8 } },
      labels: { description: 'a field', type: 'object', additionalProperties: { type: 'string' } },
      // zod's own date-time regex is dropped: the apiserver checks the format.
      at: { description: 'a field', type: 'string', format: 'date-time' },
    },
  });
});

test('CEL rules and list-map keys attached with .meta() are kept', () => {
  const item = z.object({ key: described(z.string()) });
  const schema = withRules(z.object({ items: described(listMap(z.array(item), ['key'])) }).describe('root'), [
    { rule: 'size(self.items) > 0', message: 'items must not be empty' },
  ]);
  const result = toStructuralSchema(schema, 'T');
  assert.deepEqual(result['x-kubernetes-validations'], [
    { rule: 'size(self.items) > 0', message: 'items must not be empty' },
  ]);
  assert.equal(result.properties?.items?.['x-kubernetes-list-type'], 'map');
  assert.deepEqual(result.properties?.items?.['x-kubernetes-list-map-keys'], ['key']);
});

test('withRules keeps the rules a schema already had', () => {
  const once = withRules(z.string(), [{ rule: 'self != "a"', message: 'not a' }]);
  const twice = withRules(once, [{ rule: 'self != "b"', message: 'not b' }]);
  assert.deepEqual(
    toStructuralSchema(twice.describe('x'), 'T')['x-kubernetes-validations']?.map((r) => r.message),
    ['not a', 'not b'],
  );
});

function rejection(schema: z.ZodType): CrdSchemaError {
  try {
    toStructuralSchema(schema, 'T');
  } catch (error) {
    assert.ok(error instanceof CrdSchemaError);
    return error;
  }
  assert.fail('the schema was accepted');
}

test('a property without a description is refused, naming the field', () => {
  const error = rejection(z.object({ outer: described(z.object({ inner: z.string() })) }).describe('root'));
  assert.equal(error.field, 'T.outer.inner');
  assert.match(error.message, /no description/);
});

test('constructs a structural schema cannot hold are refused, naming the keyword', () => {
  const cases: Array<[z.ZodType, RegExp]> = [
    [z.union([z.string(), z.int()]), /anyOf/],
    [z.string().nullable(), /nullable/],
    [z.string().startsWith('/'), /format/],
  ];
  for (const [field, problem] of cases) {
    const error = rejection(z.object({ field: described(field) }).describe('root'));
    assert.equal(error.field, 'T.field');
    assert.match(error.message, problem);
  }
});
