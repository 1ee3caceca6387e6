/**
 * An API key as configured: a bare key (its own organisation, allowed to terminate VMs) or a key
 * with its organisation's name (keys naming the same organisation share its resources) and its
 * terminate permission.
 */
export type ApiKeyOption = string | { key: string; org?: string; canTerminate?: boolean };

/** Who is calling: resolved from the `x-api-key` header. Never carries the key itself. */
export interface Caller {
  /** The organisation's name as configured, e.g. `org-1`. */
  readonly org: string;
  /** The organisation's numeric cloud id (v1 payloads carry it as an integer). */
  readonly orgId: string;
  readonly applicantId: string;
  readonly canTerminate: boolean;
}

interface KeyEntry {
  readonly org: string;
  readonly orgId: string;
  readonly applicantId: string;
  canTerminate: boolean;
}

/** One API key = one organisation; nothing of one organisation is visible to another's keys. */
export class KeyRegistry {
  readonly #entries = new Map<string, KeyEntry>();

  constructor(options: readonly ApiKeyOption[]) {
    if (options.length === 0) throw new Error('the simulator needs at least one API key');
    const orgIds = new Map<string, string>();
    options.forEach((option, index) => {
      const {
        key,
        org = `org-${index + 1}`,
        canTerminate = true,
      } = typeof option === 'string' ? { key: option } : option;
      if (key.length === 0) throw new Error(`API key #${index + 1} is empty`);
      if (this.#entries.has(key)) throw new Error(`API key #${index + 1} is configured twice`);
      if (!orgIds.has(org)) orgIds.set(org, String(7001 + orgIds.size));
      this.#entries.set(key, {
        org,
        orgId: orgIds.get(org) as string,
        applicantId: String(5001 + index),
        canTerminate,
      });
    });
  }

  resolve(key: string | undefined): Caller | undefined {
    const entry = key === undefined ? undefined : this.#entries.get(key);
    return entry && { ...entry };
  }

  setCanTerminate(key: string, allowed: boolean): void {
    const entry = this.#entries.get(key);
    if (entry === undefined) throw new Error('no such API key is configured');
    entry.canTerminate = allowed;
  }

  /** Adds a key to an organisation at run time (a key rotation's new key); `org` must exist. */
  add(key: string, org: string): void {
    const member = [...this.#entries.values()].find((entry) => entry.org === org);
    if (member === undefined) throw new Error(`no organisation ${org} is configured`);
    if (key.length === 0 || this.#entries.has(key)) throw new Error('the key is empty or configured already');
    this.#entries.set(key, { ...member, applicantId: String(5001 + this.#entries.size) });
  }

  /** Revokes a key: its calls answer 401 from now on. */
  revoke(key: string): void {
    if (!this.#entries.delete(key)) throw new Error('no such API key is configured');
  }

  /** The keys' organisations and permissions, without the keys. */
  describe(): Caller[] {
    return [...this.#entries.values()].map((entry) => ({ ...entry }));
  }
}
