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
 * Only turns in flight are held: nothing here outlives its turn, so nothing here is state.
 */
export class TurnCopies {
  readonly #turns = new Map<string, Turn>();
  readonly writer: ManagedWriter;

  constructor(base: ManagedWriter, { kind, mayAct }: TurnCopiesOptions) {
    const turnOf = (uid: string) => {
      const turn = this.#turns.get(uid);
      turn?.signal?.throwIfAborted();
      if (!mayAct()) throw new NotLeaderError(kind, 'in the cluster');
      return turn;
    };
    this.writer = {
      ...base,
      patchObject: async (mr, patch) => {
        const turn = turnOf(mr.metadata.uid);
        const metadata = await base.patchObject(mr, patch, turn?.signal);
        if (turn) turn.written = { metadata, status: turn.written?.status ?? mr.status };
        return metadata;
      },
      patchStatus: async (mr, status) => {
        const turn = turnOf(mr.metadata.uid);
        const resourceVersion = await base.patchStatus(mr, status, turn?.signal);
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

  /** `read` as the turn's own writes left it: the copy a write at the end of the turn must start from. */
  latest<T>(read: ManagedObject<T>): ManagedObject<T> {
    const written = this.#turns.get(read.metadata.uid)?.written;
    if (!written) return read;
    return { ...read, metadata: written.metadata, status: written.status };
  }
}
