// The node's Lease in kube-node-lease, renewed as a kubelet renews its own: what tells the node-lifecycle
// controller the node is alive between status writes.
import { z } from 'zod';
import { isStatus, type KubeClient } from '../kube/client.ts';
import { microTime } from '../kube/lease-lock.ts';
import { collectionPath, leases, objectPath } from '../kube/resource-type.ts';
import { LEASE_DURATION_SECONDS } from './cadence.ts';

export const NODE_LEASE_NAMESPACE = 'kube-node-lease';

/**
 * Renews (or first creates) the Lease of node `node` at `now`. Owned by the Node, as a kubelet's is, so that
 * it goes with the node.
 */
export async function renewNodeLease(
  client: KubeClient,
  node: { readonly name: string; readonly uid: string },
  now: Date,
): Promise<void> {
  const spec = {
    holderIdentity: node.name,
    leaseDurationSeconds: LEASE_DURATION_SECONDS,
    renewTime: microTime(now),
  };
  const key = { namespace: NODE_LEASE_NAMESPACE, name: node.name };
  try {
    await client.request(z.unknown(), { method: 'PATCH', path: objectPath(leases, key), body: { spec } });
    return;
  } catch (error) {
    if (!isStatus(error, 404)) throw error;
  }
  await client.request(z.unknown(), {
    method: 'POST',
    path: collectionPath(leases, NODE_LEASE_NAMESPACE),
    body: {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: {
        name: node.name,
        namespace: NODE_LEASE_NAMESPACE,
        ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: node.name, uid: node.uid }],
      },
      spec,
    },
  });
}
