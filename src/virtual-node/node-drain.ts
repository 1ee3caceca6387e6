// A node turned off, or whose ProviderConfig goes, is drained before it is deleted: its Pods are deleted
// as `kubectl drain` would, and each takes its cloud pod with it through the node's finalizer. Deleting the
// Node first would leave them to nobody: their cloud pods billing, the Pods held Terminating.
import { z } from 'zod';
import { isStatus, type KubeClient } from '../kube/client.ts';
import { collectionPath, nodes, objectPath, pods } from '../kube/resource-type.ts';
import { cordonPatch, type StoredNode } from './node-object.ts';

const podList = z.object({
  items: z.array(
    z.looseObject({
      metadata: z.looseObject({
        name: z.string(),
        namespace: z.string(),
        uid: z.string(),
        deletionTimestamp: z.string().nullish(),
      }),
    }),
  ),
});

/**
 * One step of the drain: cordons the node, deletes every Pod bound to it that is not going yet, and says
 * how many are left. Read from the apiserver, not a cache: a watch just started has not listed yet, and
 * "none left" deletes the node.
 */
export async function drainStep(client: KubeClient, node: StoredNode): Promise<number> {
  const cordon = cordonPatch(node);
  if (cordon) {
    await client.request(z.unknown(), {
      method: 'PATCH',
      path: objectPath(nodes, { namespace: '', name: node.metadata.name }),
      body: cordon,
    });
  }
  const { items } = await client.request(podList, {
    method: 'GET',
    path: collectionPath(pods),
    query: { fieldSelector: `spec.nodeName=${node.metadata.name}` },
  });
  for (const pod of items) {
    if (pod.metadata.deletionTimestamp) continue;
    await client
      .request(z.unknown(), {
        method: 'DELETE',
        path: objectPath(pods, { namespace: pod.metadata.namespace, name: pod.metadata.name }),
        body: { apiVersion: 'v1', kind: 'DeleteOptions', preconditions: { uid: pod.metadata.uid } },
      })
      .catch((error: unknown) => {
        // Gone, or another Pod of that name by now: nothing of this one is left to delete.
        if (!isStatus(error, 404) && !isStatus(error, 409)) throw error;
      });
  }
  return items.length;
}
