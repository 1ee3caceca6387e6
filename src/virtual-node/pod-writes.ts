// The writes a virtual node makes to its Pods and their GpuPods, as a kubelet makes its own: each
// conditional on what it was computed from (the resourceVersion read, the uid), so that a write never lands
// on a newer state or on another object of the same name.
import { z } from 'zod';
import { WrittenOver } from '../controller/written-over.ts';
import { isStatus, type KubeRequests } from '../kube/client.ts';
import { keyToString, type ObjectKey } from '../kube/object.ts';
import { collectionPath, objectPath, pods, type ResourceType } from '../kube/resource-type.ts';
import type { Clock } from '../lib/clock.ts';
import { EXTERNAL_ID } from '../managed/core/annotations.ts';
import { POD_FINALIZER } from './names.ts';
import type { NodePodObject } from './pod-object.ts';

/** A conditional write refused because the object changed since it was read: look again. */
export class StaleRead extends Error {
  constructor(what: string) {
    super(`${what} changed since it was read`);
    this.name = 'StaleRead';
  }
}

const writtenSchema = z.looseObject({
  metadata: z.looseObject({ resourceVersion: z.string().optional() }),
});

/**
 * How long a GpuPod this process made counts as on its way to the cache. Its add event wakes its Pod well
 * before; the bound only keeps a GpuPod whose events were never seen (made and deleted within a relist)
 * from holding its Pod back for good.
 */
export const MADE_UNSEEN_MS = 30_000;

export class PodWrites {
  readonly #client: KubeRequests;
  readonly #gpuPods: ResourceType;
  readonly #clock: Clock;
  /** Per Pod: the versions this process wrote over, until the cache shows one it did not. */
  readonly #writtenOver = new WrittenOver();
  /** Per Pod: when this process made its GpuPod, until a turn finds it in the cache. */
  readonly #made = new Map<string, number>();

  constructor(client: KubeRequests, gpuPods: ResourceType, clock: Clock) {
    this.#client = client;
    this.#gpuPods = gpuPods;
    this.#clock = clock;
  }

  /**
   * Whether `pod` is a version this process has already written over: the cache has not delivered that
   * write yet, and whatever is decided from it is stale (its write would be refused as one). The watch
   * brings the newer version. Versions are only compared for equality, never ordered.
   */
  precedesOwnWrite(pod: NodePodObject): boolean {
    return this.#writtenOver.precedes(keyToString(keyOf(pod)), pod.metadata.resourceVersion);
  }

  /**
   * Whether the cache lacks a GpuPod this process made for the Pod `key` moments ago: a create from that
   * view would be refused as one that exists. Its add event brings the Pod back. `cached` says whether the
   * cache has it now; once it has, the memory goes.
   */
  madeUnseen(key: ObjectKey, cached: boolean): boolean {
    const name = keyToString(key);
    const madeAt = this.#made.get(name);
    if (madeAt === undefined) return false;
    if (!cached && this.#clock.now() - madeAt < MADE_UNSEEN_MS) return true;
    this.#made.delete(name);
    return false;
  }

  /** Drops what it remembers of a Pod that is gone. */
  forget(key: ObjectKey): void {
    this.#writtenOver.forget(keyToString(key));
    this.#made.delete(keyToString(key));
  }

  /**
   * Merges `status` into the Pod's (pods/status), as of the version read; with `cloudId`, the annotation
   * naming the cloud pod goes in the same write (pods/status keeps the Pod's metadata but for its owners),
   * so the Pod says Running and which cloud pod runs it at once, in one write rather than two.
   */
  async status(pod: NodePodObject, status: Record<string, unknown>, cloudId?: string): Promise<void> {
    const annotations = cloudId === undefined ? {} : { annotations: { [EXTERNAL_ID]: cloudId } };
    await this.#podWrite(pod, {
      method: 'PATCH',
      path: `${objectPath(pods, keyOf(pod))}/status`,
      body: { metadata: { resourceVersion: pod.metadata.resourceVersion, ...annotations }, status },
    });
  }

  /** Adds the node's finalizer: the Pod stays until its cloud pod is gone. */
  async holdPod(pod: NodePodObject): Promise<void> {
    await this.#finalizers(pod, [...(pod.metadata.finalizers ?? []), POD_FINALIZER]);
  }

  /** Takes the node's finalizer off, when it is on. */
  async releasePod(pod: NodePodObject): Promise<void> {
    const finalizers = pod.metadata.finalizers ?? [];
    if (!finalizers.includes(POD_FINALIZER)) return;
    await this.#finalizers(
      pod,
      finalizers.filter((each) => each !== POD_FINALIZER),
    );
  }

  /** The kubelet's last word on a deleted Pod: gone now, and only this Pod, never a new one of its name. */
  async deletePod(pod: NodePodObject): Promise<void> {
    await this.#client
      .request(z.unknown(), {
        method: 'DELETE',
        path: objectPath(pods, keyOf(pod)),
        body: {
          apiVersion: 'v1',
          kind: 'DeleteOptions',
          gracePeriodSeconds: 0,
          preconditions: { uid: pod.metadata.uid },
        },
      })
      .catch(goneOr409);
  }

  /** Makes the GpuPod of the Pod `key` (named as the Pod). */
  async createGpuPod(key: ObjectKey, gpuPod: Record<string, unknown>): Promise<void> {
    await this.#conditional(
      'the GpuPod',
      { method: 'POST', path: collectionPath(this.#gpuPods, key.namespace), body: gpuPod },
      z.unknown(),
    );
    this.#made.set(keyToString(key), this.#clock.now());
  }

  async patchGpuPod(
    key: { namespace: string; name: string; uid: string },
    spec: Record<string, unknown>,
  ): Promise<void> {
    await this.#conditional(
      'the GpuPod',
      { method: 'PATCH', path: objectPath(this.#gpuPods, key), body: { metadata: { uid: key.uid }, spec } },
      z.unknown(),
    );
  }

  /** Deletes the GpuPod `uid`; its own finalizer deletes the cloud pod first. */
  async deleteGpuPod(key: { namespace: string; name: string; uid: string }): Promise<void> {
    await this.#client
      .request(z.unknown(), {
        method: 'DELETE',
        path: objectPath(this.#gpuPods, key),
        body: { apiVersion: 'v1', kind: 'DeleteOptions', preconditions: { uid: key.uid } },
      })
      .catch(goneOr409);
  }

  /** Whether a GpuPod of that key exists now, read from the apiserver rather than a cache. */
  async gpuPodExists(key: { namespace: string; name: string }): Promise<boolean> {
    try {
      await this.#client.request(z.unknown(), { method: 'GET', path: objectPath(this.#gpuPods, key) });
      return true;
    } catch (error) {
      if (isStatus(error, 404)) return false;
      throw error;
    }
  }

  async #finalizers(pod: NodePodObject, finalizers: string[]): Promise<void> {
    // A merge patch replaces the whole list: conditional on the list read.
    await this.#podWrite(pod, {
      method: 'PATCH',
      path: objectPath(pods, keyOf(pod)),
      body: {
        metadata: { uid: pod.metadata.uid, resourceVersion: pod.metadata.resourceVersion, finalizers },
      },
    });
  }

  /** A conditional write of `pod`, remembered as written over the version read when it made a new one. */
  async #podWrite(pod: NodePodObject, request: Parameters<KubeRequests['request']>[1]): Promise<void> {
    const written = await this.#conditional('the Pod', request, writtenSchema);
    this.#writtenOver.wrote(
      keyToString(keyOf(pod)),
      pod.metadata.resourceVersion,
      written.metadata.resourceVersion,
    );
  }

  async #conditional<S extends z.ZodType>(
    what: string,
    request: Parameters<KubeRequests['request']>[1],
    schema: S,
  ): Promise<z.output<S>> {
    try {
      return await this.#client.request(schema, request);
    } catch (error) {
      if (isStatus(error, 409)) throw new StaleRead(what);
      throw error;
    }
  }
}

function keyOf(pod: NodePodObject): { namespace: string; name: string } {
  return { namespace: pod.metadata.namespace ?? '', name: pod.metadata.name };
}

/** Gone already, or a newer one of that name (the uid precondition): nothing of ours left to delete. */
function goneOr409(error: unknown): void {
  if (!isStatus(error, 404) && !isStatus(error, 409)) throw error;
}
