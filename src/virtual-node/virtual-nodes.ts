// The virtual nodes of the operator: the node controller and the Pod controller, sharing the per-node Pod
// watches, which end when leadership does.
import { ChannelSource } from '../controller/channel-source.ts';
import type { Manager } from '../controller/manager.ts';
import type { Clock } from '../lib/clock.ts';
import type { Logger } from '../lib/logger.ts';
import { type AccountEntries, addNodeController } from './node-controller.ts';
import { addPodController } from './pod-controller.ts';
import { PodWatches } from './pod-watches.ts';

export interface VirtualNodeOptions {
  readonly accounts: AccountEntries;
  /** The nodes' InternalIP and kubelet API port: where the operator serves. */
  readonly address: string;
  readonly port: number;
  /** The namespaces the operator watches; every one when empty. */
  readonly namespaces: readonly string[];
  readonly clock: Clock;
  readonly log: Logger;
}

/** Adds the controllers; returns the Pods of the nodes this process maintains, for the kubelet API. */
export function addVirtualNodes(manager: Manager, options: VirtualNodeOptions): PodWatches {
  const changed = new ChannelSource();
  const watches = new PodWatches(manager.client, changed, options.log);
  addNodeController(manager, { ...options, watches });
  addPodController(manager, { ...options, watches, changed });
  manager.whileLeading(async (leading) => {
    await new Promise((resolve) => leading.addEventListener('abort', resolve, { once: true }));
    await watches.stopAll();
  });
  return watches;
}
