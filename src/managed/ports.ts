import type { ObjectKey } from '../kube/object.ts';
import type { ManagedObject } from './external-kind.ts';

/** `namespace/name` of a custom resource: the work-queue key and the key of per-resource memory. */
export function keyOf(obj: { metadata: ObjectKey }): string {
  return `${obj.metadata.namespace}/${obj.metadata.name}`;
}

/** Reads custom resources from the informer's cache: never a call to the apiserver. */
export interface ManagedStore {
  /** The resource with its spec as stored (unvalidated). */
  get(key: ObjectKey): ManagedObject<unknown> | undefined;
  /** Every custom resource of this kind, in any namespace, that names this cloud id. */
  claimsOn(cloudId: string): Claim[];
  /** Whether a custom resource with this uid exists and is not being deleted. */
  isLive(uid: string): boolean;
}

/** A custom resource that names a cloud id, in its external-id annotation or its status. */
export interface Claim {
  key: ObjectKey;
  uid: string;
  /** Its status records the id: the operator proved the claim when it wrote it. */
  proved: boolean;
}

export interface MetadataPatch {
  annotations?: Record<string, string | null>;
  finalizers?: string[];
  /** Fail with a conflict unless the object is still the version read (always so for finalizers). */
  ifUnchanged?: boolean;
}

export type Metadata = ManagedObject<unknown>['metadata'];

/** The writes the generic reconciler makes, each one call to the apiserver. */
export interface ManagedWriter {
  /**
   * Merge-patches metadata and answers the metadata as stored. A finalizer change is conditional on the
   * resourceVersion read, so a concurrent change to the list is never overwritten.
   */
  patchMetadata(mr: ManagedObject<unknown>, patch: MetadataPatch): Promise<Metadata>;
  /**
   * Whether an update from version `from` to `to` is exactly one of this writer's metadata patches: news
   * only to the reconcile that made it, which carried on with it. An update that spans more (a relist
   * after a missed event) is not. Each version is answered once.
   */
  isOwnWrite(from: string, to: string): boolean;
  patchStatus(mr: ManagedObject<unknown>, status: Record<string, unknown>): Promise<void>;
  /** A Secret's decoded data, or `undefined` when the Secret does not exist. */
  readSecret(namespace: string, name: string): Promise<Record<string, string> | undefined>;
}

/** Records Kubernetes Events about a resource (the runtime's `EventRecorder` is one). */
export interface EventSink {
  event(obj: ManagedObject<unknown>, type: 'Normal' | 'Warning', reason: string, message: string): void;
}
