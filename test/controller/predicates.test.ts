import assert from 'node:assert/strict';
import { test } from 'node:test';
import { annotationsChanged } from '../../src/controller/predicates.ts';
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
