// What a virtual node's Pods use, as its kubelet's summary API and resource metrics report it: read from
// what the operator already keeps, never from the cloud per request. Each Pod's memory and CPU rate are
// its GpuPod's `status.metrics` (the latest sample, refreshed every --details-interval within the
// --details-rps budget); the CPU rate is a fraction of the cloud pod's vCPUs, which come from the
// account's GPU offers (the price book the node's capacity is read from, read at most every 30 s).
import { z } from 'zod';
import type { DeepReadonly, KubeObject, ObjectKey } from '../kube/object.ts';
import type { Clock } from '../lib/clock.ts';
import type { Logger } from '../lib/logger.ts';
import { priceBookOf } from '../resources/pricing/books.ts';
import { CpuCounters } from './cpu-counters.ts';
import type { AccountEntries } from './node-controller.ts';
import { nodePodSchema } from './pod-object.ts';

export interface PodUsage {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
  /** Its one container. */
  readonly container: string;
  /** Epoch ms: when the Pod started (its status.startTime). */
  readonly startTime: number;
  /** Undefined while the vCPUs or the sample are unknown. */
  readonly cpu: { readonly nanoCores: number; readonly coreNanoSeconds: number } | undefined;
  readonly workingSetBytes: number | undefined;
}

export interface NodeUsage {
  readonly node: string;
  /** Epoch ms: the time of every figure. */
  readonly at: number;
  /** Epoch ms: when this process began counting the node's CPU time. */
  readonly startTime: number;
  readonly cpu: { readonly nanoCores: number; readonly coreNanoSeconds: number };
  readonly workingSetBytes: number;
  readonly pods: readonly PodUsage[];
  /** Some Pod's CPU is left out because the GPU offers its vCPUs come from could not be read. */
  readonly incomplete: boolean;
}

/** The Pods of the nodes this process maintains. */
export interface WatchedPods {
  keys(where: { node: string }): ObjectKey[];
  find(key: ObjectKey): { pod: DeepReadonly<KubeObject>; node: string; config: string } | undefined;
}

export interface NodeUsageOptions {
  readonly pods: WatchedPods;
  /** The GpuPod of `key` as the operator's informers hold it. */
  readonly gpuPod: (key: ObjectKey) => DeepReadonly<KubeObject> | undefined;
  readonly accounts: AccountEntries;
  readonly clock: Clock;
  readonly log: Logger;
}

const gpuPodUsageSchema = z.looseObject({
  metadata: z.looseObject({
    ownerReferences: z
      .array(z.looseObject({ uid: z.string(), controller: z.boolean().optional() }))
      .optional(),
  }),
  spec: z.looseObject({ gpuCount: z.number().optional() }).optional(),
  status: z
    .looseObject({
      phase: z.string().optional(),
      gpuType: z.string().optional(),
      region: z.string().optional(),
      metrics: z
        .looseObject({ cpuUsage: z.number().optional(), memoryUsedBytes: z.number().optional() })
        .optional(),
    })
    .optional(),
});
type GpuPodUsage = z.output<typeof gpuPodUsageSchema>;

/** The counter of the node's own CPU time, beside its Pods' (keyed by uid). */
const NODE_COUNTER = '';

export class NodeUsageReader {
  readonly #options: NodeUsageOptions;
  readonly #counters = new Map<string, { counters: CpuCounters; since: number }>();

  constructor(options: NodeUsageOptions) {
    this.#options = options;
  }

  /** The usage of `node`'s running Pods now. */
  async usage(node: string): Promise<NodeUsage> {
    const now = this.#options.clock.now();
    const state = this.#counters.get(node) ?? { counters: new CpuCounters(), since: now };
    this.#counters.set(node, state);
    const found = this.#options.pods.keys({ node }).flatMap((key) => {
      const entry = this.#options.pods.find(key);
      return entry?.node === node ? [entry] : [];
    });
    const pods: PodUsage[] = [];
    let incomplete = false;
    for (const entry of found) {
      const usage = await this.#podUsage(entry.pod, entry.config, state.counters, now);
      if (usage === 'unreadable') incomplete = true;
      else if (usage) pods.push(usage);
    }
    state.counters.keepOnly(new Set([NODE_COUNTER, ...pods.map((pod) => pod.uid)]));
    const nanoCores = pods.reduce((sum, pod) => sum + (pod.cpu?.nanoCores ?? 0), 0);
    return {
      node,
      at: now,
      startTime: state.since,
      cpu: { nanoCores, coreNanoSeconds: state.counters.read(NODE_COUNTER, nanoCores, state.since, now) },
      workingSetBytes: pods.reduce((sum, pod) => sum + (pod.workingSetBytes ?? 0), 0),
      pods,
      incomplete,
    };
  }

  /** Forgets `node`'s counters: it is no longer served here. */
  forget(node: string): void {
    this.#counters.delete(node);
  }

  async #podUsage(
    object: DeepReadonly<KubeObject>,
    config: string,
    counters: CpuCounters,
    now: number,
  ): Promise<PodUsage | 'unreadable' | undefined> {
    const parsed = nodePodSchema.safeParse(object);
    if (!parsed.success) return undefined;
    const pod = parsed.data;
    const { namespace = '', name, uid } = pod.metadata;
    const gpuPod = gpuPodUsageSchema.safeParse(this.#options.gpuPod({ namespace, name })).data;
    // Only a running container is reported, as a kubelet reports it; and only this Pod's GpuPod.
    const own = gpuPod?.metadata.ownerReferences?.some((owner) => owner.controller && owner.uid === uid);
    const metrics = gpuPod?.status?.metrics;
    if (!gpuPod || !own || gpuPod.status?.phase !== 'RUNNING') return undefined;
    // A cloud pod just started has no sample yet: nothing to report.
    if (metrics?.cpuUsage === undefined && metrics?.memoryUsedBytes === undefined) return undefined;
    const startTime = Date.parse(pod.status?.startTime ?? pod.metadata.creationTimestamp ?? '') || now;
    const cores = await this.#vcpus(config, gpuPod);
    if (cores === 'unreadable') return 'unreadable';
    const nanoCores =
      cores !== undefined && metrics?.cpuUsage !== undefined
        ? Math.round(metrics.cpuUsage * cores * 1e9)
        : undefined;
    return {
      namespace,
      name,
      uid,
      container: pod.spec.containers[0]?.name ?? name,
      startTime,
      cpu:
        nanoCores === undefined
          ? undefined
          : { nanoCores, coreNanoSeconds: counters.read(uid, nanoCores, startTime, now) },
      workingSetBytes: metrics?.memoryUsedBytes,
    };
  }

  /** The cloud pod's vCPUs: its GPU type's vCPUs per GPU (in its region when offered there) times its GPUs. */
  async #vcpus(config: string, gpuPod: GpuPodUsage): Promise<number | 'unreadable' | undefined> {
    const gpuType = gpuPod.status?.gpuType;
    const gpuCount = gpuPod.spec?.gpuCount;
    const entry = this.#options.accounts.get(config);
    if (gpuType === undefined || gpuCount === undefined || !entry || entry.problem) return undefined;
    try {
      const offers = await priceBookOf(entry.account.client, this.#options.clock).offers(
        (offer) => offer.gpuType === gpuType,
      );
      const inRegion = offers.items.filter((offer) => offer.region === gpuPod.status?.region);
      const perGpu = Math.max(0, ...(inRegion.length > 0 ? inRegion : offers.items).map((o) => o.vcpuPerGpu));
      return perGpu > 0 ? perGpu * gpuCount : undefined;
    } catch (error) {
      this.#options.log.warn({ providerConfig: config, err: error }, 'the GPU offers could not be read');
      return 'unreadable';
    }
  }
}
