// The virtual nodes of the operator: the node controller and the Pod controller, sharing the per-node Pod
// watches, and each node's kubelet API on its own port; the watches and the ports end when leadership does.
import { ChannelSource } from '../controller/channel-source.ts';
import type { Manager } from '../controller/manager.ts';
import type { Clock } from '../lib/clock.ts';
import type { Logger } from '../lib/logger.ts';
import { resourceOf } from '../resources/common/kind.ts';
import { gpuPodKind } from '../resources/gpu-pod/schema.ts';
import { KubeletEndpoints } from './kubelet-api/endpoints.ts';
import type { KubeletApiSettings } from './kubelet-api/kubelet-api.ts';
import type { PortRange } from './kubelet-port.ts';
import { type AccountEntries, addNodeController } from './node-controller.ts';
import { NodeUsageReader } from './node-usage.ts';
import { addPodController } from './pod-controller.ts';
import { PodWatches } from './pod-watches.ts';

export interface VirtualNodeOptions {
  readonly accounts: AccountEntries;
  /** The nodes' InternalIP: where the operator serves. */
  readonly address: string;
  /** The range each node's kubelet API port is picked from. */
  readonly ports: PortRange;
  /** The kubelet API's serving pair and reviewer; undefined when it is not served. */
  readonly kubeletApi: KubeletApiSettings | undefined;
  /** The namespaces the operator watches; every one when empty. */
  readonly namespaces: readonly string[];
  /** Pods reconciled at once. */
  readonly concurrency: number;
  readonly clock: Clock;
  readonly log: Logger;
}

/** Adds the controllers; returns the nodes' kubelet API endpoints, when served, to close at shutdown. */
export function addVirtualNodes(manager: Manager, options: VirtualNodeOptions): KubeletEndpoints | undefined {
  const changed = new ChannelSource();
  const watches = new PodWatches(manager.client, changed, options.log);
  const endpoints = options.kubeletApi && kubeletEndpoints(manager, options, options.kubeletApi, watches);
  addNodeController(manager, { ...options, watches, endpoints });
  addPodController(manager, { ...options, watches, changed });
  manager.whileLeading(async (leading) => {
    await new Promise((resolve) => leading.addEventListener('abort', resolve, { once: true }));
    await endpoints?.stopAll();
    await watches.stopAll();
  });
  return endpoints;
}

function kubeletEndpoints(
  manager: Manager,
  options: VirtualNodeOptions,
  settings: KubeletApiSettings,
  watches: PodWatches,
): KubeletEndpoints {
  // The GpuPods' informers the generic reconciler and the Pod controller share: no watch of its own.
  const scopes = options.namespaces.length > 0 ? options.namespaces : [''];
  const gpuPods = scopes.map((namespace) =>
    manager.informer({ resource: resourceOf(gpuPodKind), namespace }),
  );
  const usage = new NodeUsageReader({
    pods: watches,
    gpuPod: (key) => gpuPods.map((informer) => informer.store.get(key)).find((found) => found !== undefined),
    accounts: options.accounts,
    clock: options.clock,
    log: options.log,
  });
  // Listening on the nodes' InternalIP only (the pod's address in a cluster): nowhere the apiserver would
  // not come from.
  return new KubeletEndpoints({
    ...settings,
    host: options.address,
    pods: watches,
    usage,
    accounts: options.accounts,
  });
}
