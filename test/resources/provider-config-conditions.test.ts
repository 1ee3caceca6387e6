// The ProviderConfig's VirtualNode condition (src/resources/provider-config/conditions.ts): a config that
// asks for a node the operator will not make is told why, and the condition goes once it no longer holds.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { mergeConditions } from '../../src/managed/core/conditions.ts';
import { keptConditions, virtualNodeCondition } from '../../src/resources/provider-config/conditions.ts';
import { ProviderConfigSpecSchema } from '../../src/resources/provider-config/schema.ts';

function spec(virtualNode?: Record<string, unknown>) {
  return ProviderConfigSpecSchema.parse({
    apiUrl: 'https://api.example.com',
    credentials: { secretRef: { namespace: 'accounts', name: 'key', key: 'api-key' } },
    namespaces: { names: ['ml'] },
    ...(virtualNode ? { virtualNode } : {}),
  });
}

const READY = { type: 'Ready', status: 'True', reason: 'KeyAccepted', message: 'accepted' } as const;
const NOW = new Date('2026-01-01T00:00:00Z');

describe('the VirtualNode condition of a ProviderConfig', () => {
  it('says False, VirtualNodesDisabled, naming the chart value and the flag, when a node is asked for and the operator runs none', () => {
    const condition = virtualNodeCondition(spec({ enabled: true }), false);
    assert.equal(condition?.type, 'VirtualNode');
    assert.equal(condition?.status, 'False');
    assert.equal(condition?.reason, 'VirtualNodesDisabled');
    assert.match(condition?.message ?? '', /virtualNode\.enabled=true/);
    assert.match(condition?.message ?? '', /--virtual-nodes=true/);
  });

  it('is absent when the operator runs virtual nodes (the node tells its own state), or none is asked for', () => {
    assert.equal(virtualNodeCondition(spec({ enabled: true }), true), undefined);
    assert.equal(virtualNodeCondition(spec({ enabled: false }), false), undefined);
    assert.equal(virtualNodeCondition(spec(), false), undefined);
  });

  it('goes from the status once no longer said; kept, with its transition time, while it is', () => {
    const disabled = virtualNodeCondition(spec({ enabled: true }), false);
    assert.ok(disabled);
    const written = mergeConditions(undefined, [READY, disabled], 1, NOW);
    assert.deepEqual(
      written.map((c) => c.type),
      ['Ready', 'VirtualNode'],
    );
    // The operator restarted with virtual nodes: only Ready is said, and VirtualNode goes.
    assert.deepEqual(
      keptConditions(written, [READY]).map((c) => c.type),
      ['Ready'],
    );
    // Still off: both stay, so the merge keeps VirtualNode's lastTransitionTime.
    const later = new Date(NOW.getTime() + 60_000);
    const again = mergeConditions(keptConditions(written, [READY, disabled]), [READY, disabled], 1, later);
    assert.equal(again.find((c) => c.type === 'VirtualNode')?.lastTransitionTime, NOW.toISOString());
  });

  it('leaves the conditions it does not own', () => {
    const foreign = {
      ...READY,
      type: 'Audited',
      lastTransitionTime: NOW.toISOString(),
      observedGeneration: 1,
    };
    assert.deepEqual(
      keptConditions([foreign], [READY]).map((c) => c.type),
      ['Audited'],
    );
  });
});
