// The benchmark's eyes on the custom resources: one informer per kind and namespace, recording when
// each resource first showed what the phases wait for. Timestamps are taken as events arrive.

import type { KubeClient } from '../src/kube/client.ts';
import { Informer } from '../src/kube/informer.ts';
import type { DeepReadonly, KubeObject } from '../src/kube/object.ts';
import type { ResourceType } from '../src/kube/resource-type.ts';
import type { Logger } from '../src/lib/logger.ts';

interface Observed {
  status?: { phase?: string; conditions?: Array<{ type: string; status: string }> };
}

function phaseOf(obj: DeepReadonly<KubeObject>): string | undefined {
  return (obj as DeepReadonly<Observed>).status?.phase;
}

function isReady(obj: DeepReadonly<KubeObject>): boolean {
  const conditions = (obj as DeepReadonly<Observed>).status?.conditions ?? [];
  return conditions.some((condition) => condition.type === 'Ready' && condition.status === 'True');
}

/** A Pod as a kubelet reports it up: phase Running and its Ready condition True. */
export function isPodRunning(obj: DeepReadonly<KubeObject>): boolean {
  return phaseOf(obj) === 'Running' && isReady(obj);
}

export class ResourceWatch {
  /** First moment each resource was seen Ready. */
  readonly readyAt = new Map<string, number>();
  /** First moment each resource carried a finalizer (the operator's first write to it). */
  readonly finalizedAt = new Map<string, number>();
  /** When each resource was deleted from the apiserver. */
  readonly goneAt = new Map<string, number>();
  /** The latest phase of each resource, and since when. */
  readonly phase = new Map<string, { phase: string | undefined; since: number }>();
  /** Update events received: every write to a resource (status included) is one. */
  updates = 0;
  readonly #informer: Informer;
  readonly #ready: (obj: DeepReadonly<KubeObject>) => boolean;

  /** `ready` says what counts as Ready: the Ready condition True unless told otherwise. */
  constructor(
    client: KubeClient,
    resource: ResourceType,
    namespace: string,
    log: Logger,
    ready: (obj: DeepReadonly<KubeObject>) => boolean = isReady,
  ) {
    this.#ready = ready;
    this.#informer = new Informer(client, { resource, namespace }, log);
    this.#informer.addEventHandler({
      onAdd: (obj) => this.#record(obj),
      onUpdate: (_old, obj) => {
        this.updates += 1;
        this.#record(obj);
      },
      onDelete: (obj) => this.goneAt.set(obj.metadata.name, Date.now()),
    });
  }

  async start(): Promise<void> {
    this.#informer.start();
    await this.#informer.waitForSync();
  }

  stop(): Promise<void> {
    return this.#informer.stop();
  }

  get size(): number {
    return this.#informer.store.size;
  }

  #record(obj: DeepReadonly<KubeObject>): void {
    const now = Date.now();
    const { name } = obj.metadata;
    if (this.#ready(obj) && !this.readyAt.has(name)) this.readyAt.set(name, now);
    if ((obj.metadata.finalizers?.length ?? 0) > 0 && !this.finalizedAt.has(name))
      this.finalizedAt.set(name, now);
    const phase = phaseOf(obj);
    if (this.phase.get(name)?.phase !== phase) this.phase.set(name, { phase, since: now });
  }
}
