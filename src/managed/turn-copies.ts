import type { ManagedObject } from './external-kind.ts';
import type { ManagedWriter, Metadata } from './writer.ts';

interface Written {
  metadata: Metadata;
  status?: ManagedObject<unknown>['status'];
}

/**
 * The newest copy of each resource that a reconcile in flight wrote. Every status write is conditional on
 * the version it was derived from, so a turn that wrote and then failed must report the failure on top of
 * its own last write — never from the copy it began with, which the apiserver would (rightly) refuse. Only
 * turns in flight are held: nothing here outlives its turn, so nothing here is state.
 */
export class TurnCopies {
  readonly #written = new Map<string, Written | undefined>();
  readonly writer: ManagedWriter;

  constructor(base: ManagedWriter) {
    const note = (uid: string, written: Written) => {
      if (this.#written.has(uid)) this.#written.set(uid, written);
    };
    this.writer = {
      ...base,
      patchObject: async (mr, patch) => {
        const metadata = await base.patchObject(mr, patch);
        const before = this.#written.get(mr.metadata.uid);
        note(mr.metadata.uid, { metadata, status: before?.status ?? mr.status });
        return metadata;
      },
      patchStatus: async (mr, status) => {
        const resourceVersion = await base.patchStatus(mr, status);
        note(mr.metadata.uid, { metadata: { ...mr.metadata, resourceVersion }, status });
        return resourceVersion;
      },
    };
  }

  /** A turn on the resource `uid` begins: its writes are followed until `end`. */
  begin(uid: string): void {
    this.#written.set(uid, undefined);
  }

  end(uid: string): void {
    this.#written.delete(uid);
  }

  /** `read` as the turn's own writes left it: the copy a write at the end of the turn must start from. */
  latest<T>(read: ManagedObject<T>): ManagedObject<T> {
    const written = this.#written.get(read.metadata.uid);
    if (!written) return read;
    return { ...read, metadata: written.metadata, status: written.status };
  }
}
