import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { allOperations } from '../../src/api/operations.ts';
import { operationsOfSuite, SUITES } from './suites.ts';

describe('contract suite coverage', () => {
  it('claims every operation of the API exactly once', () => {
    const claims = Object.keys(SUITES).flatMap((suite) => operationsOfSuite(suite, allOperations));
    assert.deepEqual([...claims].sort(), allOperations.map((operation) => operation.name).sort());
  });

  it('has a file per suite that checks its claim at run time', () => {
    for (const suite of Object.keys(SUITES)) {
      const file = new URL(`./${suite}.test.ts`, import.meta.url);
      assert.ok(existsSync(file), `missing ${suite}.test.ts`);
      assert.match(readFileSync(file, 'utf8'), new RegExp(`itExercisedEveryOperation\\(env, '${suite}'\\)`));
    }
  });
});
