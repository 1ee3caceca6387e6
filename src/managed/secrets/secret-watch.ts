import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import type { SecretReader } from './secrets.ts';

export interface SecretWatchOptions {
  /** One get by name: the operator's RBAC never lists or watches Secrets. */
  read: SecretReader;
  /** Reconciles the resource of this `namespace/name` key again. */
  wake(key: string): void;
  /** Each Secret in use is read again this often: a rotation reaches its resources within it. */
  intervalMs: number;
  log: Logger;
}

/** The Secrets one reconcile of a resource reads, through the watch. */
export interface SecretSession {
  readonly read: SecretReader;
  /**
   * Whether a Secret read so far differs from what the resource's previous reconcile read of it: false
   * when this process has not seen the resource read it before (a restart).
   */
  changed(): boolean;
}

/** What the watch keeps of one resource: its key, and the digest of each Secret (`namespace/name`) it uses. */
interface Reader {
  readonly key: string;
  /** As its last reconcile read them. */
  readonly read: Map<string, string>;
  /** As the watch last woke it for them: woken once per change, not on every check. */
  readonly woken: Map<string, string>;
}

/**
 * Notices the rotation of the Secrets resources take values from (env `secretKeyRef`, a webhook key).
 * Every Secret a resource's last reconcile read is read again once per interval — one get per Secret,
 * however many resources use it — and a resource whose Secret changed since is woken once, so its
 * reconcile carries the new value to the cloud (an endpoint's env) or reports what cannot take it (a
 * pod's). Of a value only a digest is kept, in this process's memory.
 */
export class SecretWatch {
  readonly #o: SecretWatchOptions;
  /** By the resource's uid. */
  readonly #readers = new Map<string, Reader>();
  #checking = false;

  constructor(options: SecretWatchOptions) {
    this.#o = options;
  }

  /** The Secrets one reconcile of a resource reads: what it reads replaces what the last one read. */
  session(uid: string, key: string): SecretSession {
    const before = this.#readers.get(uid)?.read;
    let reader: Reader | undefined;
    let changed = false;
    return {
      read: async (namespace, name) => {
        const data = await this.#o.read(namespace, name);
        reader ??= { key, read: new Map(), woken: new Map() };
        this.#readers.set(uid, reader);
        const secret = `${namespace}/${name}`;
        const now = digest(data);
        const was = before?.get(secret);
        if (was !== undefined && was !== now) changed = true;
        reader.read.set(secret, now);
        return data;
      },
      changed: () => changed,
    };
  }

  /** Resources it holds something for. */
  get size(): number {
    return this.#readers.size;
  }

  forget(uid: string): void {
    this.#readers.delete(uid);
  }

  /** Checks every interval until stopped. */
  start(): () => void {
    const timer = setInterval(() => void this.check(), this.#o.intervalMs);
    timer.unref();
    return () => clearInterval(timer);
  }

  /** Reads each Secret in use once, and wakes the resources that last read another version of it. */
  async check(): Promise<void> {
    if (this.#checking) return;
    this.#checking = true;
    try {
      const readers = new Map<string, Reader[]>();
      for (const reader of this.#readers.values()) {
        for (const secret of reader.read.keys())
          readers.set(secret, [...(readers.get(secret) ?? []), reader]);
      }
      for (const [secret, using] of readers) await this.#checkOne(secret, using);
    } finally {
      this.#checking = false;
    }
  }

  async #checkOne(secret: string, using: readonly Reader[]): Promise<void> {
    const [namespace = '', name = ''] = secret.split('/');
    let now: string;
    try {
      now = digest(await this.#o.read(namespace, name));
    } catch (error) {
      this.#o.log.warn(
        { secretRef: secret, err: error },
        'reading a Secret in use failed; it is read again next interval',
      );
      return;
    }
    for (const reader of using) {
      if (reader.read.get(secret) === now || reader.woken.get(secret) === now) continue;
      // Woken once per change: a reconcile that does not read it again (a task submitted) is not woken forever.
      reader.woken.set(secret, now);
      this.#o.wake(reader.key);
    }
  }
}

/** What tells two versions of a Secret's data apart; never written anywhere. */
function digest(data: Record<string, string> | undefined): string {
  if (!data) return 'absent';
  const entries = Object.entries(data).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return createHash('sha256').update(JSON.stringify(entries)).digest('base64');
}
