// The Pods bound to each virtual node, watched as a kubelet watches its own (a field selector on
// spec.nodeName): never every Pod of the cluster. One watch per registered node, while it is registered.
import type { ChannelSource } from '../controller/channel-source.ts';
import type { KubeClient } from '../kube/client.ts';
import { Informer } from '../kube/informer.ts';
import { type DeepReadonly, type KubeObject, keyOf, type ObjectKey } from '../kube/object.ts';
import { pods } from '../kube/resource-type.ts';
import type { Logger } from '../lib/logger.ts';

interface Watch {
  /** The ProviderConfig the node is of. */
  readonly config: string;
  readonly informer: Informer;
}

export class PodWatches {
  readonly #client: KubeClient;
  readonly #changed: ChannelSource;
  readonly #log: Logger;
  readonly #watches = new Map<string, Watch>();
  /** Set by `stopAll`: a reconcile still in flight then must not start a watch nobody would stop. */
  #closed = false;

  /** Each change to a watched Pod emits its key on `changed`. */
  constructor(client: KubeClient, changed: ChannelSource, log: Logger) {
    this.#client = client;
    this.#changed = changed;
    this.#log = log;
  }

  /** Watches the Pods of `node`, which is of ProviderConfig `config`, from now on. */
  ensure(node: string, config: string): void {
    if (this.#closed || this.#watches.has(node)) return;
    const informer = new Informer(
      this.#client,
      { resource: pods, fieldSelector: `spec.nodeName=${node}` },
      this.#log.child({ node }),
    );
    const emit = (pod: DeepReadonly<KubeObject>) => this.#changed.emit(keyOf(pod));
    informer.addEventHandler({
      onAdd: (pod) => this.#changed.emit(keyOf(pod), 'new'),
      onUpdate: (_old, pod) => emit(pod),
      onDelete: emit,
    });
    informer.start();
    this.#watches.set(node, { config, informer });
  }

  /** Stops watching `node`'s Pods. */
  async drop(node: string): Promise<void> {
    const watch = this.#watches.get(node);
    this.#watches.delete(node);
    await watch?.informer.stop();
  }

  /** The Pod `key` on a watched node, with that node and its ProviderConfig. */
  find(key: ObjectKey): { pod: DeepReadonly<KubeObject>; node: string; config: string } | undefined {
    for (const [node, { config, informer }] of this.#watches) {
      const pod = informer.store.get(key);
      if (pod) return { pod, node, config };
    }
    return undefined;
  }

  /** The nodes watched now: those this process maintains. */
  nodes(): string[] {
    return [...this.#watches.keys()];
  }

  /** The keys of the watched Pods of `node`, or of every node's in `namespace`. */
  keys(where: { node: string } | { namespace: string }): ObjectKey[] {
    const watches =
      'node' in where
        ? [this.#watches.get(where.node)].filter((w) => w !== undefined)
        : [...this.#watches.values()];
    return watches.flatMap(({ informer }) =>
      [...informer.store.values()]
        .filter((pod) => !('namespace' in where) || pod.metadata.namespace === where.namespace)
        .map((pod) => keyOf(pod)),
    );
  }

  /** Stops every watch, for good: leadership ended, and a process leads at most once. */
  async stopAll(): Promise<void> {
    this.#closed = true;
    await Promise.all([...this.#watches.keys()].map((node) => this.drop(node)));
  }
}
