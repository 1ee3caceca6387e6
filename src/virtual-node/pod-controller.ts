// The Pods bound to a virtual node, judged as a kubelet's admission judges them: a Pod of a namespace its
// ProviderConfig does not list fails at once, with no cloud call. What happens to the others is the work
// of the Pod mapping (the pods are left as they are until then).
import { z } from 'zod';
import type { ChannelSource } from '../controller/channel-source.ts';
import type { Result } from '../controller/controller.ts';
import type { Manager } from '../controller/manager.ts';
import { mappedFrom } from '../controller/source.ts';
import type { ObjectKey } from '../kube/object.ts';
import { namespaces, objectPath, pods } from '../kube/resource-type.ts';
import type { Logger } from '../lib/logger.ts';
import { resourceOf } from '../resources/common/kind.ts';
import { allowsNamespace } from '../resources/provider-config/namespaces.ts';
import { ProviderConfigSpecSchema, providerConfigKind } from '../resources/provider-config/schema.ts';
import { nodeNameOf } from './names.ts';
import { podSchema, refusalOf } from './pod-admission.ts';
import type { PodWatches } from './pod-watches.ts';

/** A Pod of a namespace not in the cache yet is looked at again this soon, rather than refused. */
const UNKNOWN_NAMESPACE_RETRY_MS = 1000;

export interface PodControllerOptions {
  readonly watches: PodWatches;
  /** Where the watches tell of a changed Pod. */
  readonly changed: ChannelSource;
  readonly log: Logger;
}

export function addPodController(manager: Manager, options: PodControllerOptions): void {
  const { watches, log } = options;
  const configs = manager.informer({ resource: resourceOf(providerConfigKind) });
  const namespaceInformer = manager.informer({ resource: namespaces });

  const reconcile = async (key: ObjectKey): Promise<Result> => {
    const found = watches.find(key);
    if (!found) return {};
    const pod = podSchema.parse(found.pod);
    const config = configs.store.get({ namespace: '', name: found.config });
    const spec = ProviderConfigSpecSchema.safeParse(config?.spec);
    // Without its ProviderConfig the node is being deregistered: its Pods are the node-lifecycle's then.
    if (!spec.success) return {};
    const namespace = namespaceInformer.store.get({ namespace: '', name: key.namespace });
    if (!namespace) return { requeueAfterMs: UNKNOWN_NAMESPACE_RETRY_MS };
    const allowed = allowsNamespace(spec.data.namespaces, key.namespace, namespace.metadata.labels ?? {});
    const refusal = refusalOf(pod, found.node, found.config, allowed);
    if (!refusal) return {};
    await manager.client.request(z.unknown(), {
      method: 'PATCH',
      path: `${objectPath(pods, key)}/status`,
      body: { metadata: { resourceVersion: pod.metadata.resourceVersion }, status: refusal },
    });
    manager.events.event(found.pod, 'Warning', refusal.reason, refusal.message);
    log.info({ pod: `${key.namespace}/${key.name}`, node: found.node }, 'pod refused: namespace not allowed');
    return {};
  };

  manager.addController({
    name: 'virtual-node-pods',
    sources: [
      options.changed,
      // What decides a refusal changed: the namespaces a ProviderConfig lists, or a namespace's labels.
      mappedFrom(configs, (config) => watches.keys({ node: nodeNameOf(config.metadata.name) })),
      mappedFrom(namespaceInformer, (namespace) => watches.keys({ namespace: namespace.metadata.name })),
    ],
    reconcile,
  });
}
