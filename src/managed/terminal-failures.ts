import { CREATE_INTENT, CREATE_NAME } from './annotations.ts';
import type { ManagedObject } from './external-kind.ts';

/**
 * Resources whose last reconcile failed for good, each with the state it failed in. A terminal failure
 * is not retried until the user changes the resource — its generation, its annotations or its deletion —
 * so neither the operator's own create-intent write nor a periodic resync asks the cloud again.
 */
export class TerminalFailures {
  readonly #states = new Map<string, string>();

  record(mr: ManagedObject<unknown>): void {
    this.#states.set(mr.metadata.uid, stateOf(mr));
  }

  /** Whether `mr`, as it is now, is what last failed terminally. */
  holds(mr: ManagedObject<unknown>): boolean {
    return this.#states.get(mr.metadata.uid) === stateOf(mr);
  }

  forget(uid: string): void {
    this.#states.delete(uid);
  }
}

function stateOf(mr: ManagedObject<unknown>): string {
  const { [CREATE_INTENT]: _intent, [CREATE_NAME]: _name, ...annotations } = mr.metadata.annotations ?? {};
  return JSON.stringify([mr.metadata.generation, mr.metadata.deletionTimestamp ?? null, annotations]);
}
