// One virtual Node per ProviderConfig that asks for it (spec.virtualNode.enabled): registered, kept alive
// on a kubelet's cadence (Lease, status heartbeat), reported as the account is, and deleted when it is
// turned off or its ProviderConfig goes. Runs on the leader only, as every controller of the manager.
import { z } from 'zod';
import { ChannelSource } from '../controller/channel-source.ts';
import type { Result } from '../controller/controller.ts';
import type { Manager } from '../controller/manager.ts';
import { beyondStatus } from '../controller/predicates.ts';
import { mappedFrom, objectsOf } from '../controller/source.ts';
import { isStatus } from '../kube/client.ts';
import type { ObjectKey } from '../kube/object.ts';
import { collectionPath, nodes, objectPath } from '../kube/resource-type.ts';
import type { Clock } from '../lib/clock.ts';
import type { Logger } from '../lib/logger.ts';
import type { Entry } from '../managed/accounts/account-registry.ts';
import { resourceOf } from '../resources/common/kind.ts';
import { priceBookOf } from '../resources/pricing/books.ts';
import {
  type ProviderConfigSpec,
  ProviderConfigSpecSchema,
  providerConfigKind,
} from '../resources/provider-config/schema.ts';
import { OPERATOR_VERSION } from '../version.ts';
import { heartbeatDue, LEASE_RENEW_MS, renewalDueIn } from './cadence.ts';
import { nodeCapacity } from './capacity.ts';
import { choosePort, type PortRange, recordedPort } from './kubelet-port.ts';
import { renewNodeLease } from './lease.ts';
import {
  KUBELET_PORT_ANNOTATION,
  nodeNameOf,
  PROVIDER_CONFIG_ANNOTATION,
  VIRTUAL_NODE_LABEL,
} from './names.ts';
import { drainStep } from './node-drain.ts';
import {
  heartbeatOf,
  type NodeFacts,
  newNode,
  nodePatch,
  nodeSchema,
  nodeStatus,
  type StoredNode,
  statusDiffers,
} from './node-object.ts';
import type { PodWatches } from './pod-watches.ts';

const providerConfigs = resourceOf(providerConfigKind);
/** A kubelet's default --max-pods. */
const DEFAULT_MAX_PODS = 110;
/** How often a draining node looks again whether its Pods are gone (each waits for its cloud pod's delete). */
const DRAIN_RECHECK_MS = 2_000;

/** The accounts as the ProviderConfig controller keeps them: whether each can place, and its client. */
export interface AccountEntries {
  get(name: string): Entry | undefined;
  onChange(listener: (name: string) => void): () => void;
}

/** Where each node's kubelet API serves, on the leader: opened while the node is kept, closed as it goes. */
export interface NodeEndpoints {
  serve(node: string, port: number): Promise<void>;
  stop(node: string): Promise<void>;
}

export interface NodeControllerOptions {
  readonly accounts: AccountEntries;
  readonly watches: PodWatches;
  /** The nodes' InternalIP (the operator's), and the range each node's kubelet API port is picked from. */
  readonly address: string;
  readonly ports: PortRange;
  /** Undefined when the kubelet API is not served (no serving pair): the nodes still name their ports. */
  readonly endpoints: NodeEndpoints | undefined;
  readonly clock: Clock;
  readonly log: Logger;
}

export function addNodeController(manager: Manager, options: NodeControllerOptions): void {
  const { accounts, watches, clock, log } = options;
  const configs = manager.informer({ resource: providerConfigs });
  const nodeInformer = manager.informer({ resource: nodes, labelSelector: `${VIRTUAL_NODE_LABEL}=true` });
  const accountChanged = new ChannelSource();
  accounts.onChange((name) => accountChanged.emit({ namespace: '', name }));
  /** When this process last renewed each node's Lease (epoch ms); a new leader renews at once. */
  const renewed = new Map<string, number>();
  /** The port this process gave each node: taken at once, so two nodes looked at together never share one. */
  const claimed = new Map<string, number>();

  /**
   * The port of node `name`: the one its Node records while no other holds it, else a free one. Another
   * virtual node holds the port its Node records, or this process gave it; of two Nodes recording one port
   * (two leaders at once), the first by name keeps it. Undefined when the range has no port free.
   */
  const portOf = (name: string): number | undefined => {
    const recordOf = (node: string) =>
      recordedPort(
        nodeInformer.store.get({ namespace: '', name: node })?.metadata.annotations?.[
          KUBELET_PORT_ANNOTATION
        ],
      );
    const recorded = claimed.get(name) ?? recordOf(name);
    const held = new Map<number, string>();
    for (const node of nodeInformer.store.values()) {
      const other = node.metadata.name;
      const port = recordOf(other);
      if (other === name || port === undefined || (port === recorded && name < other)) continue;
      held.set(port, other);
    }
    for (const [other, port] of claimed) if (other !== name) held.set(port, other);
    const port = choosePort(name, recorded, options.ports, held);
    if (port === undefined) claimed.delete(name);
    else claimed.set(name, port);
    return port;
  };

  const wantedSpec = (key: ObjectKey): ProviderConfigSpec | undefined => {
    const config = configs.store.get(key);
    if (!config || config.metadata.deletionTimestamp) return undefined;
    const parsed = ProviderConfigSpecSchema.safeParse(config.spec);
    return parsed.success && parsed.data.virtualNode?.enabled ? parsed.data : undefined;
  };

  const facts = async (
    config: string,
    uid: string,
    spec: ProviderConfigSpec,
    port: number | undefined,
  ): Promise<NodeFacts> => {
    const entry = accounts.get(config);
    const limits = {
      maxLiveGpus: spec.guardrails?.maxLiveGpus,
      gpuTypes: spec.guardrails?.gpuTypes && new Set(spec.guardrails.gpuTypes),
      maxPods: spec.virtualNode?.maxPods ?? DEFAULT_MAX_PODS,
    };
    const node = {
      name: nodeNameOf(config),
      config: { name: config, uid },
      address: options.address,
      port: port ?? 0,
      version: `v0.0.0-gpucloud-operator-${OPERATOR_VERSION}`,
    };
    const notReady = (reason: string, message: string): NodeFacts => ({
      ...node,
      capacity: nodeCapacity(limits, []),
      ready: { ok: false, reason, message },
    });
    if (port === undefined) {
      const { first, last } = options.ports;
      return notReady(
        'NoKubeletPort',
        `every port of --virtual-node-ports ${first}-${last} is another virtual node's: widen the range`,
      );
    }
    // The cloud's own words (a key refused, an error) stay in the ProviderConfig's status, which only its
    // owner reads: a node is seen more widely.
    if (!entry || entry.problem) {
      return notReady(
        'AccountNotReady',
        `the account of ProviderConfig ${config} is not ready: kubectl get providerconfig ${config} says why`,
      );
    }
    try {
      const offers = await priceBookOf(entry.account.client, clock).offers(() => true);
      return {
        ...node,
        capacity: nodeCapacity(limits, offers.items),
        ready: { ok: true, reason: 'KubeletReady', message: 'gpucloud virtual node is posting ready status' },
      };
    } catch (error) {
      log.warn({ providerConfig: config, err: error }, 'the GPU offers could not be read');
      return notReady('OffersUnreadable', `the GPU offers of ProviderConfig ${config} could not be read`);
    }
  };

  /** Renews the node's Lease when this process has not in the last renewal period. */
  const renewIfDue = async (node: StoredNode): Promise<void> => {
    const { name, uid } = node.metadata;
    const now = clock.now();
    if (renewalDueIn(renewed.get(name), now) > 0) return;
    await renewNodeLease(manager.client, { name, uid: uid ?? '' }, new Date(now));
    renewed.set(name, now);
  };

  /** What this process keeps for a node it no longer maintains: its port's listener, its Pod watch. */
  const forget = async (nodeName: string): Promise<void> => {
    await options.endpoints?.stop(nodeName);
    await watches.drop(nodeName);
    renewed.delete(nodeName);
    claimed.delete(nodeName);
  };

  /** Drained first (its Pods' deletions served by its Pod watch, its Lease kept), then deleted. */
  const deregister = async (config: string, nodeName: string): Promise<Result> => {
    const cached = nodeInformer.store.get({ namespace: '', name: nodeName });
    if (cached?.metadata.annotations?.[PROVIDER_CONFIG_ANNOTATION] !== config) {
      await forget(nodeName);
      return {};
    }
    const node = nodeSchema.parse(cached);
    watches.ensure(nodeName, config);
    if ((await drainStep(manager.client, node)) > 0) {
      await renewIfDue(node);
      return { requeueAfterMs: DRAIN_RECHECK_MS };
    }
    await forget(nodeName);
    try {
      // Its Lease goes with it (owner reference).
      await manager.client.request(z.unknown(), {
        method: 'DELETE',
        path: objectPath(nodes, { namespace: '', name: nodeName }),
        body: { preconditions: { uid: node.metadata.uid } },
      });
      log.info({ providerConfig: config, node: nodeName }, 'virtual node deregistered');
    } catch (error) {
      if (!isStatus(error, 404) && !isStatus(error, 409)) throw error;
    }
    return {};
  };

  /** The node as it is now: from the cache, or registered; undefined when the name is another's. */
  const registered = async (nodeFacts: NodeFacts): Promise<StoredNode | undefined> => {
    const path = objectPath(nodes, { namespace: '', name: nodeFacts.name });
    const cached = nodeInformer.store.get({ namespace: '', name: nodeFacts.name });
    let node = cached ? nodeSchema.parse(cached) : undefined;
    if (!node) {
      try {
        node = await manager.client.request(nodeSchema, {
          method: 'POST',
          path: collectionPath(nodes),
          body: newNode(nodeFacts),
        });
        log.info({ providerConfig: nodeFacts.config.name, node: nodeFacts.name }, 'virtual node registered');
      } catch (error) {
        if (!isStatus(error, 409)) throw error;
        node = await manager.client.request(nodeSchema, { method: 'GET', path });
      }
    }
    if (node.metadata.annotations?.[PROVIDER_CONFIG_ANNOTATION] !== nodeFacts.config.name) {
      log.warn(
        { providerConfig: nodeFacts.config.name, node: nodeFacts.name },
        'a node of that name exists and is not this ProviderConfig’s: not registering over it',
      );
      return undefined;
    }
    const patch = nodePatch(node, nodeFacts);
    if (patch) node = await manager.client.request(nodeSchema, { method: 'PATCH', path, body: patch });
    return node;
  };

  const reconcile = async (key: ObjectKey): Promise<Result> => {
    const nodeName = nodeNameOf(key.name);
    const spec = wantedSpec(key);
    if (!spec) return await deregister(key.name, nodeName);
    const uid = configs.store.get(key)?.metadata.uid ?? '';
    const nodeFacts = await facts(key.name, uid, spec, portOf(nodeName));
    const node = await registered(nodeFacts);
    if (!node) {
      claimed.delete(nodeName);
      return {};
    }
    const now = clock.now();
    if (statusDiffers(node, nodeFacts) || heartbeatDue(heartbeatOf(node), now)) {
      await manager.client.request(z.unknown(), {
        method: 'PATCH',
        path: `${objectPath(nodes, { namespace: '', name: nodeName })}/status`,
        body: { status: nodeStatus(nodeFacts, node, new Date(now)) },
      });
    }
    watches.ensure(nodeName, key.name);
    if (nodeFacts.port !== 0) await options.endpoints?.serve(nodeName, nodeFacts.port);
    await renewIfDue(node);
    return { requeueAfterMs: renewalDueIn(renewed.get(nodeName), clock.now()) || LEASE_RENEW_MS };
  };

  manager.addController({
    name: 'virtual-node',
    sources: [
      // Its status (spend, counts) is nothing the node shows: the account's state comes by `accountChanged`.
      objectsOf(configs, { updatePredicate: beyondStatus() }),
      // A node is looked at through its ProviderConfig: one deleted while the operator was down goes too.
      mappedFrom(nodeInformer, (node) => {
        const config = node.metadata.annotations?.[PROVIDER_CONFIG_ANNOTATION];
        return config ? [{ namespace: '', name: config }] : [];
      }),
      accountChanged,
    ],
    reconcile,
  });
}
