import assert from 'node:assert/strict';
import { test } from 'node:test';
import { writesOf } from '../../bench/targets.ts';

// The virtual node's write targets split the apiserver's counts into the Pod's side and its GpuPod's.
test('writes per resource are summed by resource, a subresource counted with its resource', () => {
  const writes = {
    'POST pods': 1,
    'PATCH pods': 1,
    'PATCH pods/status': 1.07,
    'PATCH nodes/status': 0.01,
    'POST gpupods': 1,
    'PATCH gpupods/status': 2.31,
    'POST events': 0.3,
  };
  assert.equal(writesOf(writes, ['pods', 'nodes']), 3.08);
  assert.equal(writesOf(writes, ['gpupods', 'events']), 3.61);
  assert.equal(writesOf(writes, ['gpuvms']), 0);
});
