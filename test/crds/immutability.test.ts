import assert from 'node:assert/strict';
import { test } from 'node:test';
import { z } from 'zod';
import { withRules } from '../../src/kube/schema-meta.ts';
import { immutableExcept } from '../../src/resources/common/immutability.ts';

test('every field but the mutable ones gets a transition rule and says so in its description', () => {
  const { shape, rules } = immutableExcept(
    'Thing',
    {
      size: z.int().describe('Size.'),
      color: z.string().optional().describe('Color.'),
      owner: z.string().optional().describe('Owner.'),
      paused: z.boolean().default(false).describe('Paused.'),
      shape: z.string().default('round').describe('Shape.'),
    },
    ['paused'],
    ['owner'],
  );
  // The spec only asks whether an optional field is there: a rule on the field does not run when it
  // is added or removed.
  assert.deepEqual(rules, [
    {
      rule: 'has(self.color) == has(oldSelf.color)',
      message: 'color is immutable: delete and recreate the Thing to change it',
      fieldPath: '.color',
    },
    {
      rule: '!has(oldSelf.owner) || has(self.owner)',
      message: 'owner is immutable once set: delete and recreate the Thing to change it',
      fieldPath: '.owner',
    },
    {
      rule: 'has(self.shape) == has(oldSelf.shape)',
      message: 'shape is immutable: delete and recreate the Thing to change it',
      fieldPath: '.shape',
    },
  ]);
  const properties = z.toJSONSchema(z.object(shape), { io: 'input' }).properties ?? {};
  const fields = Object.fromEntries(
    Object.entries(properties).map(([name, field]) =>
      typeof field === 'object'
        ? [
            name,
            {
              description: field.description,
              rules: field['x-kubernetes-validations'],
              default: field.default,
            },
          ]
        : [name, undefined],
    ),
  );
  const own = (field: string, once = false) => [
    {
      rule: 'self == oldSelf',
      message: `${field} is immutable${once ? ' once set' : ''}: delete and recreate the Thing to change it`,
    },
  ];
  assert.deepEqual(fields, {
    size: {
      description: 'Size. Immutable: delete and recreate the Thing to change it.',
      rules: own('size'),
      default: undefined,
    },
    color: {
      description: 'Color. Immutable: delete and recreate the Thing to change it.',
      rules: own('color'),
      default: undefined,
    },
    owner: {
      description: 'Owner. Immutable: delete and recreate the Thing to change it.',
      rules: own('owner', true),
      default: undefined,
    },
    paused: { description: 'Paused.', rules: undefined, default: false },
    shape: {
      description: 'Shape. Immutable: delete and recreate the Thing to change it.',
      rules: own('shape'),
      default: 'round',
    },
  });
});

test('a field keeps the rules it had', () => {
  const { shape } = immutableExcept(
    'Thing',
    {
      count: withRules(z.int(), [{ rule: 'self > 0', message: 'positive' }])
        .optional()
        .describe('Count.'),
    },
    [],
  );
  const count = z.toJSONSchema(z.object(shape), { io: 'input' }).properties?.count;
  assert.deepEqual(typeof count === 'object' ? count['x-kubernetes-validations'] : undefined, [
    { rule: 'self > 0', message: 'positive' },
    { rule: 'self == oldSelf', message: 'count is immutable: delete and recreate the Thing to change it' },
  ]);
});

test('an immutable field without a description is a programming error', () => {
  assert.throws(() => immutableExcept('Thing', { size: z.int() }, []), /Thing spec.size has no description/);
});
