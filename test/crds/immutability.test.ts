import assert from 'node:assert/strict';
import { test } from 'node:test';
import { z } from 'zod';
import { immutableExcept } from '../../src/resources/common/immutability.ts';

test('every field but the mutable ones gets a transition rule and says so in its description', () => {
  const { shape, rules } = immutableExcept(
    'Thing',
    {
      size: z.int().describe('Size.'),
      color: z.string().optional().describe('Color.'),
      paused: z.boolean().default(false).describe('Paused.'),
    },
    ['paused'],
  );
  assert.deepEqual(rules, [
    {
      rule: 'self.size == oldSelf.size',
      message: 'size is immutable: delete and recreate the Thing to change it',
      fieldPath: '.size',
    },
    {
      // Adding or removing an optional field is a change too.
      rule: 'has(self.color) == has(oldSelf.color) && (!has(self.color) || self.color == oldSelf.color)',
      message: 'color is immutable: delete and recreate the Thing to change it',
      fieldPath: '.color',
    },
  ]);
  const descriptions = z.toJSONSchema(z.object(shape), { io: 'input' }).properties;
  assert.deepEqual(
    Object.fromEntries(
      Object.entries(descriptions ?? {}).map(([name, field]) => [
        name,
        typeof field === 'object' ? field.description : undefined,
      ]),
    ),
    {
      size: 'Size. Immutable: delete and recreate the Thing to change it.',
      color: 'Color. Immutable: delete and recreate the Thing to change it.',
      paused: 'Paused.',
    },
  );
});

test('an immutable field without a description is a programming error', () => {
  assert.throws(() => immutableExcept('Thing', { size: z.int() }, []), /Thing spec.size has no description/);
});
