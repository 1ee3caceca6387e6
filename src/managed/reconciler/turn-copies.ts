import { WrittenOver } from '../../controller/written-over.ts';
import type { ManagedObject } from '../core/external-kind.ts';
import { NotLeaderError } from '../core/fence.ts';
import type { ManagedWriter, Metadata } from '../core/writer.ts';

interface Turn {
  signal: AbortSignal | undefined;
  /** The turn's last write, once it wrote. */
  written?: { metadata: Metadata; status?: ManagedObject<unknown>['status'] };
}

export interface TurnCopiesOptions {
  /** The kind's name, for the refusal of a write by a process that may no longer lead. */
  kind: string;
  /** Whether this process may still write: the leader lease is certainly its own. */
  mayAct(): boolean;
}

/**
 * The turns in flight and their writes. Every write a turn makes through `writer` carries the turn's
 * signal (a lost lease or a shutdown aborts it in flight), is refused outright once this process may no
 * longer lead (as the cloud fence refuses cloud changes), and is noted: every status write is conditional
 * on the version it was derived from, so a turn that wrote and then failed must report the failure on top
 * of its own last write — never from the copy it began with, which the apiserver would (rightly) refuse.
 *
 * Every write through `writer` also notes the version it was made from, until the informer's cache shows
 * a version this process did not write over: a turn that would start from such a copy is put off
 * (`precedesOwnWrite`), since anything it wrote from it would be refused as stale, and the event of the
 * write it waits for brings it back (`caughtUp`). Versions are only compared for equality.
 * Nothing here is state: a process that forgets it all loses only the 409s it saves.
 */
export class TurnCopies {
  readonly #turns = new Map<string, Turn>();
  /** Per resource uid: the versions this process's writes were made from, until the cache passes them. */
  readonly #writtenOver = new WrittenOver();
  /** Resources whose turn was put off for a copy its own write had replaced. */
  readonly #awaiting = new Set<string>();
  readonly writer: ManagedWriter;

  constructor(base: ManagedWriter, { kind, mayAct }: TurnCopiesOptions) {
    const turnOf = (uid: string) => {
      const turn = this.#turns.get(uid);
      turn?.signal?.throwIfAborted();
      if (!mayAct()) throw new NotLeaderError(kind, 'in the cluster');
      return turn;
    };
    const wrote = (mr: ManagedObject<unknown>, version: string) =>
      this.#writtenOver.wrote(mr.metadata.uid, mr.metadata.resourceVersion, version);
    this.writer = {
      ...base,
      isOwnWrite: (from, to) => base.isOwnWrite(from, to),
      forget: (uid) => base.forget(uid),
      get size() {
        return base.size;
      },
      patchObject: async (mr, patch) => {
        const turn = turnOf(mr.metadata.uid);
        const metadata = await base.patchObject(mr, patch, turn?.signal);
        wrote(mr, metadata.resourceVersion);
        if (turn) turn.written = { metadata, status: turn.written?.status ?? mr.status };
        return metadata;
      },
      patchStatus: async (mr, status) => {
        const turn = turnOf(mr.metadata.uid);
        const resourceVersion = await base.patchStatus(mr, status, turn?.signal);
        wrote(mr, resourceVersion);
        if (turn) turn.written = { metadata: { ...mr.metadata, resourceVersion }, status };
        return resourceVersion;
      },
      deleteObject: async (mr) => {
        const turn = turnOf(mr.metadata.uid);
        await base.deleteObject(mr, turn?.signal);
      },
    };
  }

  /** A turn on the resource `uid` begins: its writes carry `signal` and are followed until `end`. */
  begin(uid: string, signal?: AbortSignal): void {
    this.#turns.set(uid, { signal });
  }

  end(uid: string): void {
    this.#turns.delete(uid);
  }

  /**
   * Whether `read` is a copy this process has written over, whose write the cache has not shown yet: a
   * turn from it is put off until `caughtUp` says that write's event came.
   */
  precedesOwnWrite(read: ManagedObject<unknown>): boolean {
    const { uid, resourceVersion } = read.metadata;
    if (!this.#writtenOver.precedes(uid, resourceVersion)) return false;
    this.#awaiting.add(uid);
    return true;
  }

  /**
   * The cache shows `obj` now (an update's new copy): whether a turn put off for it may go on, that is,
   * one was put off and this copy is past every version this process wrote over.
   */
  caughtUp(obj: { metadata: { uid?: string | undefined; resourceVersion?: string | undefined } }): boolean {
    const { uid = '', resourceVersion = '' } = obj.metadata;
    if (this.#writtenOver.precedes(uid, resourceVersion)) return false;
    return this.#awaiting.delete(uid);
  }

  /** Forgets the resource `uid`: it is gone. */
  forget(uid: string): void {
    this.#writtenOver.forget(uid);
    this.#awaiting.delete(uid);
  }

  /** Resources with a write the cache has not passed yet. */
  get size(): number {
    return this.#writtenOver.size;
  }

  /** `read` as the turn's own writes left it: the copy a write at the end of the turn must start from. */
  latest<T>(read: ManagedObject<T>): ManagedObject<T> {
    const written = this.#turns.get(read.metadata.uid)?.written;
    if (!written) return read;
    return { ...read, metadata: written.metadata, status: written.status };
  }
}
