import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { type NodePod, refusalOf } from '../../src/virtual-node/pod-admission.ts';

function pod(phase?: string, deleting = false): NodePod {
  return {
    metadata: {
      name: 'web-1',
      namespace: 'team-b',
      ...(deleting ? { deletionTimestamp: '2026-01-01T00:00:00Z' } : {}),
    },
    spec: { nodeName: 'gpucloud-team-a' },
    ...(phase ? { status: { phase } } : {}),
  };
}

describe('virtual node admission', () => {
  test('a Pod of a namespace the ProviderConfig does not list fails with NamespaceNotAllowed, as a kubelet words it', () => {
    assert.deepEqual(refusalOf(pod('Pending'), 'gpucloud-team-a', 'team-a', false), {
      phase: 'Failed',
      reason: 'NamespaceNotAllowed',
      message:
        'Pod was rejected: namespace team-b may not run Pods on node gpucloud-team-a: ProviderConfig team-a does not list it in spec.namespaces',
    });
    assert.equal(refusalOf(pod(), 'gpucloud-team-a', 'team-a', false)?.reason, 'NamespaceNotAllowed');
  });

  test('a Pod of an allowed namespace is not refused', () => {
    assert.equal(refusalOf(pod('Pending'), 'gpucloud-team-a', 'team-a', true), undefined);
  });

  test('a started, finished or departing Pod is left alone: only a Pod not yet started is judged', () => {
    assert.equal(refusalOf(pod('Running'), 'n', 'c', false), undefined);
    assert.equal(refusalOf(pod('Failed'), 'n', 'c', false), undefined);
    assert.equal(refusalOf(pod('Succeeded'), 'n', 'c', false), undefined);
    assert.equal(refusalOf(pod('Pending', true), 'n', 'c', false), undefined);
  });
});
