import { createHash } from 'node:crypto';
import { ReconcileError } from '../core/errors.ts';
import type { ManagedObject } from '../core/external-kind.ts';
import type { ManagedWriter } from '../core/writer.ts';

/**
 * Writes what a workload needs to reach a resource (SSH command, addresses, URLs) into a Secret of the
 * resource's namespace, as Crossplane's `writeConnectionSecretToRef`. The Secret is owned by the resource
 * (a controller ownerReference, so it goes with it) and written only when its data changes; a Secret the
 * resource does not control is never overwritten.
 */
export class ConnectionSecrets {
  readonly #writer: ManagedWriter;
  /** Digest of the data last written, by resource uid: an unchanged status costs no request. */
  readonly #written = new Map<string, string>();

  constructor(writer: ManagedWriter) {
    this.#writer = writer;
  }

  /**
   * Writes the Secret; answers why it could not, when a Secret of that name is not the resource's. The
   * refusal is answered, not thrown: the status must still tell the truth about the cloud object.
   */
  async publish(
    mr: ManagedObject<unknown>,
    name: string,
    data: Record<string, string>,
  ): Promise<ReconcileError | undefined> {
    const { uid } = mr.metadata;
    const digest = digestOf(name, data);
    if (this.#written.get(uid) === digest) return undefined;
    const outcome = await this.#writer.writeOwnedSecret(mr, name, data);
    if (outcome === 'not-owned') {
      this.#written.delete(uid);
      return new ReconcileError(
        'ConnectionSecretNotOwned',
        `Secret ${name} exists and is not controlled by this resource, so its connection details are not ` +
          'written there: delete that Secret, or name another in spec.writeConnectionSecretToRef',
        { terminal: false },
      );
    }
    this.#written.set(uid, digest);
    return undefined;
  }

  /** Resources it holds something for. */
  get size(): number {
    return this.#written.size;
  }

  forget(uid: string): void {
    this.#written.delete(uid);
  }
}

function digestOf(name: string, data: Record<string, string>): string {
  const sorted = Object.keys(data)
    .sort()
    .map((key) => [key, data[key]]);
  return createHash('sha256')
    .update(JSON.stringify([name, sorted]))
    .digest('base64url');
}
