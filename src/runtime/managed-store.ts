import { z } from 'zod';
import { EXTERNAL_ID } from '../resources/annotations.ts';
import { managedStatusSchema } from '../resources/common/status.ts';
import type { ManagedObject } from '../resources/external.ts';
import { type DeepReadonly, type KubeObject, keyOf, type ObjectKey } from './kube-object.ts';
import type { ManagedStore } from './managed-types.ts';
import type { ObjectStore } from './object-store.ts';

const INDEX = 'external-id';

/** A namespaced custom resource as the apiserver stores it: spec raw, status with its shared fields typed. */
export const managedEnvelope = z.looseObject({
  apiVersion: z.string(),
  kind: z.string(),
  metadata: z.looseObject({
    namespace: z.string(),
    name: z.string(),
    uid: z.string(),
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
 * The informer cache seen as custom resources, with an index from cloud id to the resource that records
 * it (crash recovery must never take over a cloud object another resource owns). Reads return a parsed
 * copy, so a reconciler can never mutate the shared cache.
 */
export function managedStore(store: ObjectStore<KubeObject>): ManagedStore {
  store.addIndex(INDEX, (obj) => {
    const id = obj.metadata.annotations?.[EXTERNAL_ID];
    return id ? [id] : [];
  });
  return {
    get: (key) => parseManaged(store.get(key)),
    ownerOf: (cloudId): ObjectKey | undefined => {
      const [owner] = store.byIndex(INDEX, cloudId);
      return owner && keyOf(owner);
    },
  };
}

export function parseManaged(obj: DeepReadonly<KubeObject> | undefined): ManagedObject<unknown> | undefined {
  if (!obj) return undefined;
  const { spec, ...rest } = managedEnvelope.parse(obj);
  return { ...rest, spec };
}
