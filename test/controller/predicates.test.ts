import assert from 'node:assert/strict';
import { test } from 'node:test';
import { annotationsChanged, beyondStatus } from '../../src/controller/predicates.ts';
import type { DeepReadonly, KubeObject } from '../../src/kube/object.ts';

function annotated(annotations: Record<string, string>): DeepReadonly<KubeObject> {
  return { metadata: { name: 'a', namespace: 'ns', annotations } };
}

test('annotationsChanged passes a changed annotation and ignores the controller’s own bookkeeping', () => {
  const changed = annotationsChanged(['example.io/intent']);
  const before = annotated({ 'example.io/intent': '1', 'example.io/user': 'x' });

  assert.equal(changed(before, annotated({ 'example.io/intent': '2', 'example.io/user': 'x' })), false);
  assert.equal(changed(before, annotated({ 'example.io/user': 'x' })), false);
  assert.equal(changed(before, annotated({ 'example.io/intent': '1', 'example.io/user': 'y' })), true);
  assert.equal(changed(before, annotated({ 'example.io/intent': '1' })), true);
  assert.equal(changed(annotated({ b: '2', a: '1' }), annotated({ a: '1', b: '2' })), false);
  assert.equal(
    annotationsChanged()(before, annotated({ 'example.io/intent': '2', 'example.io/user': 'x' })),
    true,
  );
});

test('beyondStatus passes the spec, deletion, finalizers and annotations, never a status-only write', () => {
  const base = {
    metadata: { name: 'c', namespace: '', generation: 1, resourceVersion: '10', annotations: { a: '1' } },
    spec: { namespaces: { names: ['team-a'] } },
    status: { users: 3 },
  };
  const changed = beyondStatus();
  const with_ = (patch: { metadata?: Record<string, unknown>; status?: unknown }) => ({
    ...base,
    metadata: { ...base.metadata, resourceVersion: '11', ...patch.metadata },
    status: patch.status ?? base.status,
  });
  assert.equal(changed(base, with_({ status: { users: 4, spend: { total: 1 } } })), false, 'status only');
  assert.equal(changed(base, with_({ metadata: { generation: 2 } })), true, 'the spec');
  assert.equal(changed(base, with_({ metadata: { deletionTimestamp: '2026-12-06T12:00:00Z' } })), true);
  assert.equal(changed(base, with_({ metadata: { finalizers: ['gpucloud.io/in-use'] } })), true);
  assert.equal(changed(base, with_({ metadata: { annotations: { a: '2' } } })), true);
});
