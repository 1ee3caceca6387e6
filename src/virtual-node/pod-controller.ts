// The Pods bound to a virtual node, run as a kubelet runs its own, each by one GpuPod and so by the generic
// reconciler: a Pod the node cannot run (its namespace not allowed, its spec unmappable) fails at once with
// no cloud call; another gets its GpuPod, its status mirrors the GpuPod's, and its deletion waits until
// the GpuPod, and with it the cloud pod, is gone.
import { isDeepStrictEqual } from 'node:util';
import type { ChannelSource } from '../controller/channel-source.ts';
import type { Result } from '../controller/controller.ts';
import type { Manager } from '../controller/manager.ts';
import { beyondStatus, generationChanged, type UpdatePredicate } from '../controller/predicates.ts';
import { mappedFrom } from '../controller/source.ts';
import type { KubeObject, ObjectKey } from '../kube/object.ts';
import { namespaces } from '../kube/resource-type.ts';
import type { Clock } from '../lib/clock.ts';
import type { Logger } from '../lib/logger.ts';
import { EXTERNAL_ID } from '../managed/core/annotations.ts';
import { resourceOf } from '../resources/common/kind.ts';
import { gpuPodKind } from '../resources/gpu-pod/schema.ts';
import { allowsNamespace } from '../resources/provider-config/namespaces.ts';
import { ProviderConfigSpecSchema, providerConfigKind } from '../resources/provider-config/schema.ts';
import type { MappingContext } from './mapping-context.ts';
import { nodeNameOf, POD_FINALIZER } from './names.ts';
import type { AccountEntries } from './node-controller.ts';
import { type Refusal, refusalOf } from './pod-admission.ts';
import { keeping, newGpuPod, ownerOf, type StoredGpuPod, storedGpuPodSchema } from './pod-gpu-pod.ts';
import { configMapsNamed, mapPod, secretsNamed } from './pod-mapping.ts';
import { type NodePodObject, nodePodSchema } from './pod-object.ts';
import { nodeGpuTypes, readConfigMaps, readSecrets } from './pod-reads.ts';
import { mirroredChanged, podStatus, podStatusDiffers, type Waiting } from './pod-status.ts';
import type { PodWatches } from './pod-watches.ts';
import { PodWrites, StaleRead } from './pod-writes.ts';

/** A Pod of a namespace not in the cache yet is looked at again this soon, rather than refused. */
const UNKNOWN_NAMESPACE_RETRY_MS = 1000;
/** A container waiting on something no watch tells of (a ConfigMap, the GPU offers) looks again this soon. */
const WAITING_RETRY_MS = 5000;
/** A GpuPod's own changes its Pod reads: its spec (kept as the Pod says), its deletion, its owner. */
const gpuPodNews: UpdatePredicate<KubeObject> = (before, after) =>
  generationChanged(before, after) ||
  before.metadata.deletionTimestamp !== after.metadata.deletionTimestamp ||
  !isDeepStrictEqual(before.metadata.ownerReferences, after.metadata.ownerReferences);
/** The reason of a Pod whose name a GpuPod of no Pod holds: it can never have it. */
export const GPU_POD_NAME_TAKEN = 'GpuPodNameTaken';
/** The reason a container waits while the GpuPod of an earlier Pod of its name is still going. */
export const PREVIOUS_POD_TERMINATING = 'PreviousPodTerminating';

export interface PodControllerOptions {
  readonly watches: PodWatches;
  /** Where the watches tell of a changed Pod. */
  readonly changed: ChannelSource;
  readonly accounts: AccountEntries;
  /** The nodes' InternalIP: each Pod's hostIP. */
  readonly address: string;
  /** The namespaces the operator watches (its GpuPods' informers); every one when empty. */
  readonly namespaces: readonly string[];
  /** Pods reconciled at once (the operator's --concurrency, as for its own kinds); one Pod never twice. */
  readonly concurrency: number;
  readonly clock: Clock;
  readonly log: Logger;
}

export function addPodController(manager: Manager, options: PodControllerOptions): void {
  const { watches, log, clock } = options;
  const configs = manager.informer({ resource: resourceOf(providerConfigKind) });
  const namespaceInformer = manager.informer({ resource: namespaces });
  const gpuPods = resourceOf(gpuPodKind);
  // The generic reconciler's own informers, shared: no second watch of the GpuPods.
  const scopes = options.namespaces.length > 0 ? options.namespaces : [''];
  const gpuPodInformers = scopes.map((namespace) => manager.informer({ resource: gpuPods, namespace }));
  const writes = new PodWrites(manager.client, gpuPods, clock);

  const cachedGpuPod = (key: ObjectKey): StoredGpuPod | undefined => {
    for (const informer of gpuPodInformers) {
      const found = informer.store.get(key);
      if (found) return storedGpuPodSchema.parse(found);
    }
    return undefined;
  };
  const watched = (namespace: string) => scopes.includes('') || scopes.includes(namespace);

  const refuse = async (pod: NodePodObject, node: string, refusal: Refusal): Promise<Result> => {
    await writes.status(pod, { ...refusal });
    manager.events.event(pod, 'Warning', refusal.reason, refusal.message);
    log.info(
      { pod: `${pod.metadata.namespace}/${pod.metadata.name}`, node, reason: refusal.reason },
      'pod refused',
    );
    return {};
  };

  /**
   * Writes the Pod's status as its GpuPod (or `waiting`) says, when that is news, and in the same write the
   * annotation naming its cloud pod (for the kubelet API) once the status names its container: a cloud pod
   * the cloud is still starting is no news, and the kubelet API answers as for a container being made.
   */
  const mirror = async (pod: NodePodObject, gpuPod: StoredGpuPod | undefined, waiting?: Waiting) => {
    const status = podStatus({
      pod,
      nodeAddress: options.address,
      gpuPod: gpuPod?.status,
      waiting,
      now: new Date(clock.now()),
    });
    const id = gpuPod?.status?.id;
    const named = status.containerStatuses[0]?.containerID !== undefined;
    const cloudId = named && pod.metadata.annotations?.[EXTERNAL_ID] !== id ? id : undefined;
    if (podStatusDiffers(pod, status)) await writes.status(pod, { ...status }, cloudId);
  };

  /**
   * A Pod done with (deleted, or finished): its GpuPod deleted and gone first, then the finalizer off;
   * then, if it is being deleted, the kubelet's final delete.
   */
  const finish = async (pod: NodePodObject, gpuPod: StoredGpuPod | undefined): Promise<Result> => {
    const key = { namespace: pod.metadata.namespace ?? '', name: pod.metadata.name };
    if (gpuPod && ownerOf(gpuPod, pod) === 'this-pod') {
      if (!gpuPod.metadata.deletionTimestamp) {
        await writes.deleteGpuPod({ ...key, uid: gpuPod.metadata.uid ?? '' });
      }
      return {}; // its delete event brings the Pod back here
    }
    // The cache may not have the GpuPod just made: ask before letting the Pod go.
    const held = pod.metadata.finalizers?.some((each) => each === POD_FINALIZER) ?? false;
    if (held && !gpuPod && (await writes.gpuPodExists(key))) return { requeueAfterMs: WAITING_RETRY_MS };
    await writes.releasePod(pod);
    if (pod.metadata.deletionTimestamp) await writes.deletePod(pod);
    return {};
  };

  const run = async (
    pod: NodePodObject,
    node: string,
    config: string,
    guardrails: readonly string[] | undefined,
  ): Promise<Result> => {
    const key = { namespace: pod.metadata.namespace ?? '', name: pod.metadata.name };
    const gpuPod = cachedGpuPod(key);
    // Its GpuPod made moments ago and not in the cache yet: its add event brings the Pod back.
    if (writes.madeUnseen(key, gpuPod !== undefined)) return { deferred: true };
    const owner = gpuPod && ownerOf(gpuPod, pod);
    if (owner === 'not-a-pod') {
      return refuse(pod, node, {
        phase: 'Failed',
        reason: GPU_POD_NAME_TAKEN,
        message: `Pod was rejected: GpuPod ${key.namespace}/${key.name} exists and is no Pod's: the Pod's cloud pod would be made by a GpuPod of its name`,
      });
    }
    if (owner === 'another-pod') {
      await mirror(pod, undefined, {
        reason: PREVIOUS_POD_TERMINATING,
        message: `the GpuPod of an earlier Pod named ${key.name} is still being deleted`,
      });
      return { requeueAfterMs: WAITING_RETRY_MS };
    }
    const context: Omit<MappingContext, 'configMaps' | 'secrets'> = {
      config,
      node: { name: node, address: options.address },
      gpuTypes: await nodeGpuTypes(options.accounts, config, guardrails, clock, log),
    };
    if (!gpuPod) {
      // Of the Pod's own namespace only: a Pod can name no other namespace's ConfigMap or Secret.
      const [configMaps, secrets] = await Promise.all([
        readConfigMaps(manager.client, key.namespace, configMapsNamed(pod)),
        readSecrets(manager.client, key.namespace, secretsNamed(pod)),
      ]);
      const mapping = mapPod(pod, { ...context, configMaps, secrets });
      if (mapping.kind === 'refused') return refuse(pod, node, mapping.refusal);
      if (mapping.kind === 'waiting') {
        await mirror(pod, undefined, mapping);
        return { requeueAfterMs: WAITING_RETRY_MS };
      }
      // The finalizer first, so that no GpuPod ever exists for a Pod that could go without it; once it is
      // written (conditional on the copy read), the GpuPod in the same turn: no second pass through the queue.
      if (!pod.metadata.finalizers?.includes(POD_FINALIZER)) await writes.holdPod(pod);
      await writes.createGpuPod(key, newGpuPod(pod, mapping.spec));
      log.info({ pod: `${key.namespace}/${key.name}`, node }, 'GpuPod made for the pod');
      for (const warning of mapping.warnings) {
        manager.events.event(pod, 'Warning', warning.reason, warning.message);
      }
      return {};
    }
    // Its own GpuPod: kept as the Pod says (what a user edited put back), its status mirrored.
    const wanted = mapPod(pod, context);
    if (wanted.kind === 'mapped') {
      const keep = keeping(gpuPod, wanted.spec);
      const gpuKey = { ...key, uid: gpuPod.metadata.uid ?? '' };
      if (keep.kind === 'replace' && !gpuPod.metadata.deletionTimestamp) {
        log.info(
          { pod: `${key.namespace}/${key.name}`, field: keep.field },
          'the pod changed its container: its cloud pod is made again',
        );
        await writes.deleteGpuPod(gpuKey);
      } else if (keep.kind === 'patch') {
        log.info(
          { pod: `${key.namespace}/${key.name}`, fields: Object.keys(keep.spec) },
          'GpuPod spec put back as the pod says',
        );
        await writes.patchGpuPod(gpuKey, keep.spec);
      }
    }
    await mirror(pod, gpuPod);
    return {};
  };

  const reconcile = async (key: ObjectKey): Promise<Result> => {
    const found = watches.find(key);
    if (!found) {
      writes.forget(key);
      return {};
    }
    const pod = nodePodSchema.parse(found.pod);
    // Its own last write not seen yet: the watch brings this Pod back with it.
    if (writes.precedesOwnWrite(pod)) return { deferred: true };
    const config = configs.store.get({ namespace: '', name: found.config });
    const spec = ProviderConfigSpecSchema.safeParse(config?.spec);
    try {
      if (pod.metadata.deletionTimestamp) return await finish(pod, cachedGpuPod(key));
      const phase = pod.status?.phase ?? 'Pending';
      if (phase === 'Failed' || phase === 'Succeeded') return await finish(pod, cachedGpuPod(key));
      // Without its ProviderConfig the node is being deregistered: its Pods are the node-lifecycle's then.
      if (!spec.success) return {};
      const namespace = namespaceInformer.store.get({ namespace: '', name: key.namespace });
      if (!namespace) return { requeueAfterMs: UNKNOWN_NAMESPACE_RETRY_MS };
      const allowed = allowsNamespace(spec.data.namespaces, key.namespace, namespace.metadata.labels ?? {});
      const refusal =
        refusalOf(pod, found.node, found.config, allowed) ?? unwatchedRefusal(pod, watched(key.namespace));
      if (refusal) return await refuse(pod, found.node, refusal);
      if (!allowed || !watched(key.namespace)) return {};
      return await run(pod, found.node, found.config, spec.data.guardrails?.gpuTypes);
    } catch (error) {
      // Read before someone else's write: look again at once, from the newer copy.
      if (error instanceof StaleRead) return { requeue: true };
      throw error;
    }
  };

  manager.addController({
    name: 'virtual-node-pods',
    maxConcurrentReconciles: options.concurrency,
    sources: [
      options.changed,
      // What decides a refusal changed: the namespaces a ProviderConfig lists, or a namespace's labels.
      mappedFrom(configs, (config) => watches.keys({ node: nodeNameOf(config.metadata.name) }), {
        updatePredicate: beyondStatus(),
      }),
      mappedFrom(namespaceInformer, (namespace) => watches.keys({ namespace: namespace.metadata.name })),
      // A GpuPod is named as its Pod: its change is the Pod's news (and a name freed is news to a Pod waiting
      // for it), when it changes what the Pod reads of it: its spec, its deletion, what its status shows.
      ...gpuPodInformers.map((informer) =>
        mappedFrom(
          informer,
          (gpuPod) => [{ namespace: gpuPod.metadata.namespace ?? '', name: gpuPod.metadata.name }],
          {
            updatePredicate: (before, after) =>
              gpuPodNews(before, after) || mirroredChanged(before.status, after.status),
          },
        ),
      ),
    ],
    reconcile,
  });
}

/** A Pod of a namespace the operator does not watch: no reconciler would run its GpuPod. */
function unwatchedRefusal(pod: NodePodObject, watched: boolean): Refusal | undefined {
  if (watched || (pod.status?.phase ?? 'Pending') !== 'Pending') return undefined;
  return {
    phase: 'Failed',
    reason: 'NamespaceNotWatched',
    message: `Pod was rejected: the operator does not watch namespace ${pod.metadata.namespace} (its --namespace flag)`,
  };
}
