import { z } from 'zod';

/**
 * The part of `metadata` the runtime relies on. Loose: every other field the apiserver sends
 * (ownerReferences, managedFields, ...) is kept as is.
 */
export const objectMetaSchema = z.looseObject({
  name: z.string().min(1),
  namespace: z.string().optional(),
  uid: z.string().optional(),
  resourceVersion: z.string().optional(),
  generation: z.number().int().optional(),
  creationTimestamp: z.string().optional(),
  deletionTimestamp: z.string().optional(),
  labels: z.record(z.string(), z.string()).optional(),
  annotations: z.record(z.string(), z.string()).optional(),
  finalizers: z.array(z.string()).optional(),
});

/** Envelope every Kubernetes object has, whatever its kind. Spec and status stay untouched. */
export const kubeObjectSchema = z.looseObject({
  apiVersion: z.string().optional(),
  kind: z.string().optional(),
  metadata: objectMetaSchema,
});

export type ObjectMeta = z.infer<typeof objectMetaSchema>;
export type KubeObject = z.infer<typeof kubeObjectSchema>;

/** `metav1.Status`, the body of every apiserver error and of a watch `ERROR` event. */
export const statusSchema = z.looseObject({
  kind: z.literal('Status').optional(),
  code: z.number().int().optional(),
  reason: z.string().optional(),
  message: z.string().optional(),
});
export type Status = z.infer<typeof statusSchema>;

/**
 * Objects handed out from a shared cache are never copied, so their type forbids mutation: copy
 * (`structuredClone`) before changing anything.
 */
export type DeepReadonly<T> = T extends (infer U)[]
  ? readonly DeepReadonly<U>[]
  : T extends object
    ? { readonly [K in keyof T]: DeepReadonly<T[K]> }
    : T;

/** Identifies one object; `namespace` is `''` for cluster-scoped kinds. */
export interface ObjectKey {
  readonly namespace: string;
  readonly name: string;
}

/** `namespace/name`, or `name` alone for a cluster-scoped object (client-go's MetaNamespaceKeyFunc). */
export function keyToString(key: ObjectKey): string {
  return key.namespace === '' ? key.name : `${key.namespace}/${key.name}`;
}

export function keyFromString(key: string): ObjectKey {
  const slash = key.indexOf('/');
  return slash < 0
    ? { namespace: '', name: key }
    : { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}

export function keyOf(obj: DeepReadonly<KubeObject>): ObjectKey {
  return { namespace: obj.metadata.namespace ?? '', name: obj.metadata.name };
}
