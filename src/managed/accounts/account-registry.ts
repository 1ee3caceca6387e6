import { createHash } from 'node:crypto';
import { unwatchFile, watchFile } from 'node:fs';
import { readFile } from 'node:fs/promises';
import type { Registry } from 'prom-client';
import { GpuCloudClient } from '../../api/client.ts';
import type { ApiKeySource } from '../../api/client-options.ts';
import type { Logger } from '../../lib/logger.ts';
import { DEFAULT_ACCOUNT } from '../core/account-ref.ts';
import { ReconcileError } from '../core/errors.ts';
import { type Account, type AccountDirectory, type AccountPolicy, notAllowed, Usage } from './accounts.ts';

/** How every account's client is made: the operator's timeouts, log and metrics registry. */
export interface ClientSettings {
  readonly requestTimeoutMs: number;
  readonly requestsPerSecond: number;
  readonly logger: Logger;
  readonly registry: Registry;
}

/**
 * A key that can change while the operator runs: `current` is what was read last, `refresh` reads anew.
 * The key before the last change is kept, so intents signed just before a rotation still verify.
 */
export class RotatingKey implements ApiKeySource {
  readonly #read: () => Promise<string>;
  #current: string;
  #previous: string | undefined;

  constructor(initial: string, read: () => Promise<string>) {
    this.#current = initial;
    this.#read = read;
  }

  current(): string {
    return this.#current;
  }

  /** The current key, and the one before it if any. */
  keys(): string[] {
    return this.#previous === undefined ? [this.#current] : [this.#current, this.#previous];
  }

  async refresh(): Promise<string> {
    this.set(await this.#read());
    return this.#current;
  }

  set(key: string): void {
    if (key === '' || key === this.#current) return;
    this.#previous = this.#current;
    this.#current = key;
  }
}

/** One account and its client, as the registry keeps it. */
export interface Entry {
  readonly account: Account;
  readonly key: RotatingKey;
  /** Why resources may not use it now; undefined once its key is proven. */
  problem?: ReconcileError | undefined;
}

export function makeAccount(
  name: string,
  apiUrl: string,
  key: RotatingKey,
  policy: AccountPolicy,
  settings: ClientSettings,
  limits: { requestsPerSecond?: number | undefined; pollIntervalMs?: number | undefined } = {},
  usage: Usage = new Usage(),
): Account {
  const requestsPerSecond = limits.requestsPerSecond ?? settings.requestsPerSecond;
  return {
    name,
    scope: new URL(apiUrl).href,
    client: new GpuCloudClient({
      baseUrl: apiUrl,
      apiKey: key,
      account: name,
      requestTimeoutMs: settings.requestTimeoutMs,
      rateLimit: { requestsPerSecond, burst: Math.ceil(requestsPerSecond) },
      logger: settings.logger.child({ component: 'gpucloud-api', account: name }),
      metrics: settings.registry,
    }),
    pollIntervalMs: limits.pollIntervalMs,
    policy,
    intentKeys: () => key.keys(),
    usage,
  };
}

/**
 * Which cloud account a key opens: the API URL and a digest of the key. The cloud bills an organisation,
 * and every key of one is one account to it; a key is the one mark of it the operator can read without a
 * call (two different keys of one organisation are told apart — docs/spend.md says so).
 */
export function cloudAccountOf(apiUrl: string, key: string): string {
  return `${new URL(apiUrl).href}\n${createHash('sha256').update(key).digest('base64url')}`;
}

/** How soon a resource whose account is not known or not ready yet looks again. */
export const ACCOUNT_RECHECK_MS = 3_000;

/**
 * The accounts resources may name: ProviderConfigs by name, and the operator's own flags as the implicit
 * `default` unless a ProviderConfig takes that name.
 */
export class AccountRegistry implements AccountDirectory {
  readonly #configured = new Map<string, Entry>();
  readonly #implicit: Entry | undefined;
  readonly #revisions = new Map<string, number>();
  readonly #listeners = new Set<(name: string) => void>();
  /** One usage per cloud account, whichever ProviderConfigs open it: their reservations are one. */
  readonly #usages = new Map<string, Usage>();

  constructor(implicit?: Entry) {
    this.#implicit = implicit;
    if (implicit) {
      const { account, key } = implicit;
      this.#usages.set(cloudAccountOf(account.scope, key.current()), account.usage);
    }
  }

  /**
   * The usage of the cloud account `key` opens at `apiUrl`: shared by every account of the registry that
   * opens it, so that two ProviderConfigs with one key cannot each let a burst through.
   */
  usageFor(apiUrl: string, key: string): Usage {
    const id = cloudAccountOf(apiUrl, key);
    const known = this.#usages.get(id);
    if (known) return known;
    const usage = new Usage();
    this.#usages.set(id, usage);
    return usage;
  }

  resolve(name: string, namespace: string): Account {
    const entry = this.#entry(name);
    if (entry === undefined) {
      throw new ReconcileError(
        'ProviderConfigNotFound',
        `no ProviderConfig ${name}; create it, or name another in spec.providerConfigRef`,
        // Comes when the config is made or read (a restart reads them all): steadily, not backed off.
        { terminal: false, retryAfterMs: ACCOUNT_RECHECK_MS },
      );
    }
    // The boundary between teams: every path (converge, finalize, release, recovery) connects through here.
    if (!entry.account.policy.allowsNamespace(namespace)) throw notAllowed(name, namespace);
    if (entry.problem) throw entry.problem;
    return entry.account;
  }

  scopeOf(name: string): string | undefined {
    return this.#entry(name)?.account.scope;
  }

  get(name: string): Entry | undefined {
    return this.#configured.get(name);
  }

  set(name: string, entry: Entry): void {
    const replaced = this.#configured.get(name);
    this.#configured.set(name, entry);
    if (replaced && replaced.account !== entry.account) void replaced.account.client.close();
    this.changed(name);
  }

  delete(name: string): void {
    const entry = this.#configured.get(name);
    this.#configured.delete(name);
    if (entry) void entry.account.client.close();
    this.changed(name);
  }

  /** The account changed in place (a new key, proven or refused): what it refused may now be allowed. */
  changed(name: string): void {
    this.#revisions.set(name, this.revision(name) + 1);
    for (const listener of this.#listeners) listener(name);
  }

  revision(name: string): number {
    return this.#revisions.get(name) ?? 0;
  }

  onChange(listener: (name: string) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  async close(): Promise<void> {
    const entries = [...this.#configured.values(), ...(this.#implicit ? [this.#implicit] : [])];
    await Promise.all(entries.map((entry) => entry.account.client.close()));
  }

  #entry(name: string): Entry | undefined {
    return this.#configured.get(name) ?? (name === DEFAULT_ACCOUNT ? this.#implicit : undefined);
  }
}

/** The implicit account's policy: every namespace, no limits, adoption as the flag says. */
export function openPolicy(adoption: boolean): AccountPolicy {
  return { allowsNamespace: () => true, adoption };
}

/**
 * A key file (a mounted Secret), read anew when it changes: the kubelet rewrites a mounted Secret within
 * its sync period, about a minute. Returns a function that stops watching.
 */
export function watchKeyFile(file: string, key: RotatingKey, log: Logger, intervalMs = 5_000): () => void {
  const reread = () => {
    readFile(file, 'utf8').then(
      (text) => {
        const before = key.current();
        key.set(text.trim());
        if (key.current() !== before) log.info({ file }, 'API key file changed; using the new key');
      },
      (error: unknown) => log.warn({ file, err: error }, 'could not read the API key file; keeping the key'),
    );
  };
  watchFile(file, { interval: intervalMs, persistent: false }, reread);
  return () => unwatchFile(file, reread);
}

export function readKeyFile(file: string): () => Promise<string> {
  return async () => (await readFile(file, 'utf8')).trim();
}
