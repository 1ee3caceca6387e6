// The connection of a pod: the apiserver's service address and the pod's service-account token, with
// nothing else loaded, so the operator's idle memory stays small in the cluster.
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  KubeConfigError,
  type KubeConnection,
  KubeCredentialError,
  type KubeTls,
} from './connection-types.ts';

const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';
/** Names another service-account directory: the benchmark runs the operator on this path outside a pod. */
export const SERVICE_ACCOUNT_DIR_ENV = 'GPUCLOUD_SERVICEACCOUNT_DIR';
// Bound service-account tokens rotate; client-go re-reads the file about once a minute.
const TOKEN_REREAD_MS = 60_000;

export interface InClusterOptions {
  readonly env?: NodeJS.ProcessEnv;
  /** Holds `token` and `ca.crt`; the kubelet mounts it at /var/run/secrets/kubernetes.io/serviceaccount. */
  readonly serviceAccountDir?: string;
  readonly tokenRereadMs?: number;
}

export async function inClusterConnection(options: InClusterOptions = {}): Promise<KubeConnection> {
  const env = options.env ?? process.env;
  const dir = options.serviceAccountDir ?? env[SERVICE_ACCOUNT_DIR_ENV] ?? SERVICE_ACCOUNT_DIR;
  const source = 'in-cluster';
  const host = env.KUBERNETES_SERVICE_HOST;
  const port = env.KUBERNETES_SERVICE_PORT;
  const hint = 'not running in a pod? pass --kubeconfig or set KUBECONFIG';
  if (!host) throw new KubeConfigError(source, 'KUBERNETES_SERVICE_HOST', `not set (${hint})`);
  if (!port) throw new KubeConfigError(source, 'KUBERNETES_SERVICE_PORT', `not set (${hint})`);
  const caPath = join(dir, 'ca.crt');
  let ca: string;
  try {
    ca = readFileSync(caPath, 'utf8');
  } catch (err) {
    throw new KubeConfigError(source, caPath, `cannot read: ${describe(err)}`, { cause: err });
  }
  const tokens = new FileToken(source, join(dir, 'token'), options.tokenRereadMs ?? TOKEN_REREAD_MS);
  // A missing token should stop the operator at startup, not fail every request later.
  await tokens.token();
  // One object for the connection's life: its clients never see new TLS material, so never rebuild their pool.
  const tls: KubeTls = { ca, rejectUnauthorized: true };
  return {
    server: `https://${host.includes(':') ? `[${host}]` : host}:${port}`,
    source,
    auth: async () => ({ headers: { authorization: `Bearer ${await tokens.token()}` }, tls }),
  };
}

/** A token file, re-read at most once per interval. */
class FileToken {
  readonly #source: string;
  readonly #path: string;
  readonly #rereadMs: number;
  #token: string | undefined;
  #readAt = 0;
  // The read under way: concurrent callers share it rather than each reading the file.
  #reading: Promise<string> | undefined;

  constructor(source: string, path: string, rereadMs: number) {
    this.#source = source;
    this.#path = path;
    this.#rereadMs = rereadMs;
  }

  async token(): Promise<string> {
    if (this.#token !== undefined && Date.now() - this.#readAt < this.#rereadMs) return this.#token;
    this.#reading ??= this.#read().finally(() => {
      this.#reading = undefined;
    });
    return this.#reading;
  }

  async #read(): Promise<string> {
    let token: string;
    try {
      token = (await readFile(this.#path, 'utf8')).trim();
    } catch (err) {
      // A rotation replaces the file through a symlink swap; a read that loses that race keeps the
      // last token, which stays valid well beyond the re-read interval.
      if (this.#token !== undefined) return this.#token;
      throw new KubeCredentialError(this.#source, `cannot read token file ${this.#path}: ${describe(err)}`, {
        cause: err,
      });
    }
    if (token === '') {
      if (this.#token !== undefined) return this.#token;
      throw new KubeCredentialError(this.#source, `token file ${this.#path} is empty`);
    }
    this.#token = token;
    this.#readAt = Date.now();
    return token;
  }
}

function describe(err: unknown): string {
  if (err instanceof Error && 'code' in err && typeof err.code === 'string') return err.code;
  return err instanceof Error ? err.message : String(err);
}
