import { isDeepStrictEqual } from 'node:util';
import type { DeepReadonly, KubeObject } from '../kube/object.ts';

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

/**
 * An annotation other than the `ignored` ones changed. A controller ignores the bookkeeping it writes for
 * itself: waking on it would turn each write on a failing path into a reconcile outside the backoff.
 */
export function annotationsChanged<T extends KubeObject>(
  ignored: readonly string[] = [],
): UpdatePredicate<T> {
  const relevant = (annotations: Readonly<Record<string, string>> | undefined) =>
    Object.fromEntries(Object.entries(annotations ?? {}).filter(([key]) => !ignored.includes(key)));
  return (oldObj, newObj) =>
    !isDeepStrictEqual(relevant(oldObj.metadata.annotations), relevant(newObj.metadata.annotations));
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

export function anyOf<T extends KubeObject>(...predicates: UpdatePredicate<T>[]): UpdatePredicate<T> {
  return (oldObj, newObj) => predicates.some((predicate) => predicate(oldObj, newObj));
}

/**
 * Anything but the status changed: the spec, deletion or a finalizer, an annotation. For an object whose
 * status its readers never act on, such as a ProviderConfig's spend and counts, whose own writes would
 * otherwise wake every controller that watches it.
 */
export function beyondStatus<T extends KubeObject>(): UpdatePredicate<T> {
  return anyOf<T>(generationChanged, deletionChanged, annotationsChanged());
}
