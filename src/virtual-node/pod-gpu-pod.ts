// The GpuPod a Pod on a virtual node is run by: made for it (named as it, owned by it, labelled with its
// uid), told apart from a GpuPod of the same name that is not its own, and kept as the Pod says. Pure.
import { isDeepStrictEqual } from 'node:util';
import { z } from 'zod';
import { objectMetaSchema } from '../kube/object.ts';
import { GPU_POD_MUTABLE_FIELDS, gpuPodKind } from '../resources/gpu-pod/schema.ts';
import type { MappedSpec } from './mapping-context.ts';
import { POD_UID_LABEL } from './names.ts';
import type { NodePodObject } from './pod-object.ts';
import { gpuPodStatusSchema } from './pod-status.ts';

export const storedGpuPodSchema = z.looseObject({
  metadata: objectMetaSchema.extend({
    ownerReferences: z
      .array(
        z.looseObject({
          apiVersion: z.string(),
          kind: z.string(),
          uid: z.string(),
          controller: z.boolean().optional(),
        }),
      )
      .optional(),
  }),
  spec: z.record(z.string(), z.unknown()).optional(),
  status: gpuPodStatusSchema.optional(),
});
export type StoredGpuPod = z.output<typeof storedGpuPodSchema>;

/** What a change of the Pod's own spec makes the container restart with: its cloud pod is replaced. */
const REPLACED_ON = ['image'] as const;

/** The GpuPod to create for `pod`, in its namespace and of its name. */
export function newGpuPod(pod: NodePodObject, spec: MappedSpec): Record<string, unknown> {
  const { name, namespace, uid } = pod.metadata;
  return {
    apiVersion: `${gpuPodKind.group}/${gpuPodKind.version}`,
    kind: gpuPodKind.kind,
    metadata: {
      name,
      namespace,
      labels: { [POD_UID_LABEL]: uid },
      // Garbage-collected with the Pod even if the Pod's finalizer is taken off by hand.
      ownerReferences: [
        { apiVersion: 'v1', kind: 'Pod', name, uid, controller: true, blockOwnerDeletion: true },
      ],
    },
    spec,
  };
}

/** Whose the GpuPod of the Pod's name is: this Pod's, an earlier Pod's of that name, or no Pod's. */
export function ownerOf(gpuPod: StoredGpuPod, pod: NodePodObject): 'this-pod' | 'another-pod' | 'not-a-pod' {
  const controller = gpuPod.metadata.ownerReferences?.find((owner) => owner.controller === true);
  if (controller?.apiVersion !== 'v1' || controller.kind !== 'Pod') return 'not-a-pod';
  return controller.uid === pod.metadata.uid ? 'this-pod' : 'another-pod';
}

export type Keeping =
  | { readonly kind: 'as-is' }
  /** A merge patch of the spec putting back what someone changed. */
  | { readonly kind: 'patch'; readonly spec: Record<string, unknown> }
  /** The Pod's image changed: its cloud pod is made again, as a kubelet restarts the container. */
  | { readonly kind: 'replace'; readonly field: string };

/** What keeps `gpuPod` as `wanted` says. */
export function keeping(gpuPod: StoredGpuPod, wanted: MappedSpec): Keeping {
  const stored = gpuPod.spec ?? {};
  const want: Record<string, unknown> = wanted;
  const changed = REPLACED_ON.find((field) => !isDeepStrictEqual(stored[field], want[field]));
  if (changed) return { kind: 'replace', field: changed };
  const patch: Record<string, unknown> = {};
  // The fields a user may change once it is made are kept as the mapping says; one it leaves out is removed.
  for (const field of GPU_POD_MUTABLE_FIELDS) {
    const value = want[field] ?? null;
    if (!isDeepStrictEqual(stored[field] ?? null, value)) patch[field] = value;
  }
  return Object.keys(patch).length === 0 ? { kind: 'as-is' } : { kind: 'patch', spec: patch };
}
