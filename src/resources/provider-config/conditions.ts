// The conditions of a ProviderConfig beside its `Ready` (the key, written by its controller): `VirtualNode`,
// why a node it asks for does not appear. The node says the rest about itself (docs/virtual-node.md); what
// it cannot say is that no controller runs to make it.
import type { ConditionInput } from '../../managed/core/conditions.ts';
import type { Condition } from '../../managed/core/status-schema.ts';
import type { ProviderConfigSpec } from './schema.ts';

export const VIRTUAL_NODE_CONDITION = 'VirtualNode';

/** The conditions the ProviderConfig controller writes: each reconcile says all it has to, and one it does not say goes. */
const OWNED = new Set(['Ready', VIRTUAL_NODE_CONDITION]);

/**
 * `VirtualNode` `False` while the spec asks for a node the operator was not started to make; nothing
 * otherwise (the node itself, `gpucloud-<name>`, then tells its own state).
 */
export function virtualNodeCondition(
  spec: ProviderConfigSpec,
  virtualNodes: boolean,
): ConditionInput | undefined {
  if (virtualNodes || !spec.virtualNode?.enabled) return undefined;
  return {
    type: VIRTUAL_NODE_CONDITION,
    status: 'False',
    reason: 'VirtualNodesDisabled',
    message:
      'spec.virtualNode.enabled asks for a virtual node, but the operator runs without virtual nodes: ' +
      'install the chart with virtualNode.enabled=true (or start the operator with --virtual-nodes=true), ' +
      'which grants it Nodes, and Pods and ConfigMaps in every namespace',
  };
}

/** The conditions kept from `current`: those of others, and those of ours `updates` says again. */
export function keptConditions(
  current: readonly Condition[] | undefined,
  updates: readonly ConditionInput[],
): Condition[] {
  return (current ?? []).filter(
    (condition) => !OWNED.has(condition.type) || updates.some((update) => update.type === condition.type),
  );
}
