import assert from 'node:assert/strict';
import { test } from 'node:test';
import { mergeConditions, statusChanged } from '../../src/managed/core/conditions.ts';

const t0 = new Date('2026-01-01T00:00:00Z');
const t1 = new Date('2026-01-01T01:00:00Z');

test('a condition keeps its transition time until its status flips', () => {
  const first = mergeConditions(
    undefined,
    [{ type: 'Ready', status: 'False', reason: 'Initializing', message: 'starting' }],
    1,
    t0,
  );
  const same = mergeConditions(
    first,
    [{ type: 'Ready', status: 'False', reason: 'Pausing', message: 'other words' }],
    2,
    t1,
  );
  assert.equal(same[0]?.lastTransitionTime, t0.toISOString());
  assert.equal(same[0]?.observedGeneration, 2);
  const flipped = mergeConditions(
    same,
    [{ type: 'Ready', status: 'True', reason: 'Running', message: '' }],
    2,
    t1,
  );
  assert.equal(flipped[0]?.lastTransitionTime, t1.toISOString());
});

test('conditions not updated are kept, and the list has a stable order', () => {
  const both = mergeConditions(
    undefined,
    [
      { type: 'Synced', status: 'True', reason: 'ReconcileSuccess', message: '' },
      { type: 'Ready', status: 'True', reason: 'Running', message: '' },
    ],
    1,
    t0,
  );
  const onlySynced = mergeConditions(
    both,
    [{ type: 'Synced', status: 'False', reason: 'CloudUnavailable', message: 'x' }],
    1,
    t1,
  );
  assert.deepEqual(
    onlySynced.map((c) => c.type),
    ['Ready', 'Synced'],
  );
  assert.equal(onlySynced[0]?.reason, 'Running');
});

test('a status differing only in lastSyncTime or undefined fields is unchanged; any visible field is a change', () => {
  const current = { phase: 'RUNNING', id: '1', lastSyncTime: t0.toISOString(), metrics: { cpuUsage: 0.5 } };
  assert.equal(
    statusChanged(current, {
      phase: 'RUNNING',
      id: '1',
      lastSyncTime: t1.toISOString(),
      sshCommand: undefined,
      metrics: { cpuUsage: 0.5, gpus: undefined },
    }),
    false,
  );
  assert.equal(statusChanged(current, { ...current, metrics: { cpuUsage: 0.6 } }), true);
  assert.equal(
    statusChanged(current, { phase: 'RUNNING', id: '1' }),
    true,
    'a field that disappears is a change',
  );
  assert.equal(statusChanged(undefined, { phase: 'RUNNING' }), true);
});
