import { isDeepStrictEqual } from 'node:util';
import type { DeepReadonly, KubeObject } from './kube-object.ts';

/** Decides whether an update is worth a reconcile; resyncs, adds and deletes always are. */
export type UpdatePredicate<T extends KubeObject> = (
  oldObj: DeepReadonly<T>,
  newObj: DeepReadonly<T>,
) => boolean;

/**
 * The spec changed (or deletion began: the apiserver bumps `generation` then too). Status-only
 * writes, including the controller's own, do not pass.
 */
export function generationChanged<T extends KubeObject>(
  oldObj: DeepReadonly<T>,
  newObj: DeepReadonly<T>,
): boolean {
  return oldObj.metadata.generation !== newObj.metadata.generation;
}

export function annotationsChanged<T extends KubeObject>(
  oldObj: DeepReadonly<T>,
  newObj: DeepReadonly<T>,
): boolean {
  return !isDeepStrictEqual(oldObj.metadata.annotations ?? {}, newObj.metadata.annotations ?? {});
}

/** Deletion began or a finalizer came or went: the finalizer logic has work. */
export function deletionChanged<T extends KubeObject>(
  oldObj: DeepReadonly<T>,
  newObj: DeepReadonly<T>,
): boolean {
  return (
    oldObj.metadata.deletionTimestamp !== newObj.metadata.deletionTimestamp ||
    !isDeepStrictEqual(oldObj.metadata.finalizers ?? [], newObj.metadata.finalizers ?? [])
  );
}

export function labelsChanged<T extends KubeObject>(
  oldObj: DeepReadonly<T>,
  newObj: DeepReadonly<T>,
): boolean {
  return !isDeepStrictEqual(oldObj.metadata.labels ?? {}, newObj.metadata.labels ?? {});
}

export function anyOf<T extends KubeObject>(...predicates: UpdatePredicate<T>[]): UpdatePredicate<T> {
  return (oldObj, newObj) => predicates.some((predicate) => predicate(oldObj, newObj));
}
