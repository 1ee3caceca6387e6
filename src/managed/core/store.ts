import { z } from 'zod';
import { type DeepReadonly, type KubeObject, keyOf, type ObjectKey } from '../../kube/object.ts';
import type { ObjectStore } from '../../kube/object-store.ts';
import { accountOf } from './account-ref.ts';
import { EXTERNAL_ID } from './annotations.ts';
import type { ManagedObject } from './external-kind.ts';
import { managedStatusSchema } from './status-schema.ts';

const BY_CLOUD_ID = 'cloud-id';
const BY_UID = 'uid';

/** A namespaced custom resource as the apiserver stores it: spec raw, status with its shared fields typed. */
export const managedEnvelope = z.looseObject({
  apiVersion: z.string(),
  kind: z.string(),
  metadata: z.looseObject({
    namespace: z.string(),
    name: z.string(),
    uid: z.string(),
    creationTimestamp: z.string().optional(),
    generation: z.number().int(),
    resourceVersion: z.string(),
    annotations: z.record(z.string(), z.string()).optional(),
    finalizers: z.array(z.string()).optional(),
    deletionTimestamp: z.string().optional(),
  }),
  spec: z.unknown(),
  status: managedStatusSchema.optional(),
});

/**
 * The informer caches (one per watched namespace, or one for the cluster) seen as custom resources,
 * indexed by the cloud ids each resource names (in its external-id annotation or its status) and by uid,
 * so the reconciler can tell who holds a cloud object. Reads return a parsed copy, so a reconciler can
 * never mutate the shared cache.
 */
export function managedStore(stores: readonly ObjectStore<KubeObject>[]): ManagedStore {
  for (const store of stores) {
    store.addIndex(BY_CLOUD_ID, (obj) => {
      const ids = new Set([obj.metadata.annotations?.[EXTERNAL_ID], statusIdOf(obj)]);
      return [...ids].filter((id): id is string => typeof id === 'string' && id !== '');
    });
    store.addIndex(BY_UID, (obj) => (obj.metadata.uid ? [obj.metadata.uid] : []));
  }
  const byIndex = (index: string, value: string) => stores.flatMap((store) => store.byIndex(index, value));
  return {
    get: (key) => parseManaged(stores.map((store) => store.get(key)).find((obj) => obj !== undefined)),
    claimsOn: (cloudId): Claim[] =>
      byIndex(BY_CLOUD_ID, cloudId).map((obj) => ({
        key: keyOf(obj),
        uid: obj.metadata.uid ?? '',
        account: accountOf(obj.spec),
        proved: statusIdOf(obj) === cloudId,
      })),
    isLive: (uid) => byIndex(BY_UID, uid).some((obj) => !obj.metadata.deletionTimestamp),
  };
}

function statusIdOf(obj: DeepReadonly<KubeObject>): string | undefined {
  const { status } = obj;
  if (typeof status !== 'object' || status === null || !('id' in status)) return undefined;
  return typeof status.id === 'string' ? status.id : undefined;
}

export function parseManaged(obj: DeepReadonly<KubeObject> | undefined): ManagedObject<unknown> | undefined {
  if (!obj) return undefined;
  const { spec, ...rest } = managedEnvelope.parse(obj);
  return { ...rest, spec };
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
  /** The account it names: claims collide only within one API URL. */
  account: string;
  /** Its status records the id: the operator proved the claim when it wrote it. */
  proved: boolean;
}
