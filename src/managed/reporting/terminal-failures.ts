import { accountOf } from '../core/account-ref.ts';
import { BOOKKEEPING } from '../core/annotations.ts';
import { keyOf, type ManagedObject } from '../core/external-kind.ts';

/**
 * Resources whose last reconcile failed for good, each with the state it failed in. A terminal failure
 * is not retried until the user changes the resource — its generation, its annotations or its deletion —
 * or the account it names changes (a refusal may rest on the account's policy: adoption, namespaces,
 * guardrails, the key), so neither the operator's own create-intent write nor a periodic resync asks the
 * cloud again.
 */
export class TerminalFailures {
  readonly #states = new Map<string, { state: string; key: string; account: string }>();
  readonly #revision: (account: string) => number;

  constructor(revision: (account: string) => number) {
    this.#revision = revision;
  }

  record(mr: ManagedObject<unknown>): void {
    const account = accountOf(mr.spec);
    this.#states.set(mr.metadata.uid, { state: this.#stateOf(mr, account), key: keyOf(mr), account });
  }

  /** Whether `mr`, as it is now, is what last failed terminally, on the account as it is now. */
  holds(mr: ManagedObject<unknown>): boolean {
    return this.#states.get(mr.metadata.uid)?.state === this.#stateOf(mr, accountOf(mr.spec));
  }

  /** The keys of the resources refused while naming `account`: a change of it wakes them. */
  keysOn(account: string): string[] {
    return [...this.#states.values()].filter((each) => each.account === account).map((each) => each.key);
  }

  /** Resources it holds something for. */
  get size(): number {
    return this.#states.size;
  }

  forget(uid: string): void {
    this.#states.delete(uid);
  }

  #stateOf(mr: ManagedObject<unknown>, account: string): string {
    const annotations = Object.entries(mr.metadata.annotations ?? {}).filter(
      ([name]) => !BOOKKEEPING.some((own) => own === name),
    );
    return JSON.stringify([
      mr.metadata.generation,
      mr.metadata.deletionTimestamp ?? null,
      annotations,
      account,
      this.#revision(account),
    ]);
  }
}
