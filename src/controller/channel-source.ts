import type { ObjectKey } from '../kube/object.ts';
import type { Enqueue, EventSource } from './source.ts';
import type { Arrival } from './work-queue.ts';

/**
 * An event source fed by code instead of an informer: changes the cloud cache saw, detail refreshes that
 * fell due, callbacks. Keys emitted before the controller starts are dropped; the controller's first
 * pass over the informer covers them.
 */
export class ChannelSource implements EventSource {
  readonly #hasSynced: () => boolean;
  #enqueue: Enqueue | undefined;

  constructor(hasSynced: () => boolean = () => true) {
    this.#hasSynced = hasSynced;
  }

  start(enqueue: Enqueue): () => void {
    this.#enqueue = enqueue;
    return () => {
      this.#enqueue = undefined;
    };
  }

  hasSynced(): boolean {
    return this.#hasSynced();
  }

  emit(key: ObjectKey, arrival?: Arrival): void {
    this.#enqueue?.(key, arrival);
  }
}
