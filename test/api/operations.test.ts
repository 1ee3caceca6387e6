import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { z } from 'zod';
import type { Operation } from '../../src/api/operation.ts';
import { allOperations, operations } from '../../src/api/operations.ts';

const names = allOperations.map((operation) => operation.name);

function placeholders(path: string): string[] {
  return [...path.matchAll(/\{(\w+)\}/g)].map((match) => match[1] ?? '').sort();
}

function paramKeys(operation: Operation): string[] {
  assert.ok(operation.params instanceof z.ZodObject, `${operation.name}: params must be an object schema`);
  return Object.keys(operation.params.shape).sort();
}

/** The operation reached by following a dotted name through the `operations` tree. */
function lookUp(name: string): unknown {
  return name.split('.').reduce<unknown>((node, key) => (node as Record<string, unknown>)[key], operations);
}

describe('operations table', () => {
  it('has all 43 operations of the spec, each once', () => {
    assert.equal(allOperations.length, 43);
    assert.equal(new Set(names).size, 43);
    const routes = allOperations.map((operation) => `${operation.method} ${operation.path}`);
    assert.equal(new Set(routes).size, 43);
  });

  it('counts per group match the spec', () => {
    const count = (prefix: string) => names.filter((name) => name.startsWith(prefix)).length;
    assert.equal(count('vms.'), 6);
    assert.equal(count('pods.'), 9);
    assert.equal(count('serverless.'), 12);
    assert.equal(count('metrics.'), 5);
    assert.equal(count('legacy.vms.'), 5);
    assert.equal(count('legacy.pods.'), 6);
  });

  it('each name is its place in the operations tree', () => {
    for (const operation of allOperations) assert.equal(lookUp(operation.name), operation);
  });

  it('path placeholders and params keys agree', () => {
    for (const operation of allOperations) {
      assert.deepEqual(placeholders(operation.path), paramKeys(operation), operation.name);
    }
  });

  it('marks exactly the calls that create something billed as creating', () => {
    const creating = allOperations
      .filter((operation) => operation.creates)
      .map((operation) => operation.name);
    assert.deepEqual(creating.sort(), [
      'legacy.pods.create',
      'legacy.vms.create',
      'pods.create',
      'serverless.create',
      'serverless.tasks.submit',
      'vms.create',
    ]);
  });

  it('paths are v2 or legacy v1 as the group says', () => {
    for (const operation of allOperations) {
      const prefix = operation.name.startsWith('legacy.') ? '/openapi/v1/' : '/v2/';
      assert.ok(operation.path.startsWith(prefix), `${operation.name}: ${operation.path}`);
    }
  });

  it('a literal path comes before a templated sibling it would otherwise match', () => {
    const pattern = (path: string) => new RegExp(`^${path.replace(/\{\w+\}/g, '[^/]+')}$`);
    allOperations.forEach((templated, index) => {
      for (const literal of allOperations.slice(index + 1)) {
        const shadows =
          literal.method === templated.method &&
          placeholders(literal.path).length < placeholders(templated.path).length &&
          pattern(templated.path).test(literal.path);
        assert.ok(!shadows, `${literal.name} must come before ${templated.name}`);
      }
    });
  });
});
