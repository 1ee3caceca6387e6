import type { Informer } from '../kube/informer.ts';
import { type DeepReadonly, type KubeObject, keyOf, type ObjectKey } from '../kube/object.ts';
import type { UpdatePredicate } from './predicates.ts';
import type { Arrival } from './work-queue.ts';

/** `arrival` is `ongoing` when left out (see `Arrival`). */
export type Enqueue = (key: ObjectKey, arrival?: Arrival) => void;

/**
 * Something a controller watches, turned into keys of the objects to reconcile. Type-erased, so
 * one controller can watch informers of different kinds.
 */
export interface EventSource {
  /** Starts delivering keys (objects already cached included); returns the function that stops. */
  start(enqueue: Enqueue): () => void;
  hasSynced(): boolean;
}

export interface SourceOptions<T extends KubeObject> {
  /** Updates that fail it are ignored (adds, deletes and resyncs always pass). */
  readonly updatePredicate?: UpdatePredicate<T>;
}

/** The controller's own kind: every change enqueues the object's own key. */
export function objectsOf<T extends KubeObject>(
  informer: Informer<T>,
  options: SourceOptions<T> = {},
): EventSource {
  return mappedFrom(informer, (obj) => [keyOf(obj)], options);
}

/**
 * A secondary kind: every change enqueues the keys `map` returns, e.g. the custom resources that
 * reference a changed Secret. On update both the old and the new object are mapped, so a
 * reference that was just removed still triggers a reconcile.
 */
export function mappedFrom<T extends KubeObject>(
  informer: Informer<T>,
  map: (obj: DeepReadonly<T>) => Iterable<ObjectKey>,
  options: SourceOptions<T> = {},
): EventSource {
  return {
    hasSynced: () => informer.hasSynced(),
    start(enqueue) {
      const enqueueAll = (obj: DeepReadonly<T>) => {
        for (const key of map(obj)) enqueue(key);
      };
      return informer.addEventHandler({
        onAdd: enqueueAll,
        onDelete: enqueueAll,
        onResync: enqueueAll,
        onUpdate(oldObj, newObj) {
          if (options.updatePredicate && !options.updatePredicate(oldObj, newObj)) return;
          enqueueAll(oldObj);
          enqueueAll(newObj);
        },
      });
    },
  };
}
