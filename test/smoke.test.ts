import assert from 'node:assert/strict';
import { test } from 'node:test';
import { OPERATOR_VERSION } from '../src/version.ts';

test('runs on Node 24 with native TypeScript', () => {
  assert.equal(process.versions.node.split('.')[0], '24');
  assert.match(OPERATOR_VERSION, /^\d+\.\d+\.\d+$/);
});
