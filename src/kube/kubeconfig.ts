// A kubeconfig, read by client-node's `KubeConfig` (maintained by the Kubernetes project): every way of
// authenticating it knows — tokens, client certificates, exec plugins, auth providers (OIDC, GCP,
// Azure), basic auth — impersonation, proxy-url, contexts and merged $KUBECONFIG lists. This module is
// imported only when a kubeconfig is used; the operator in a pod never loads client-node.
import type { RequestOptions } from 'node:https';
import { delimiter, resolve } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import {
  type KubeAuth,
  KubeConfigError,
  type KubeConnection,
  KubeCredentialError,
  type KubeTls,
} from './connection-types.ts';

/** How long one computation of the headers and TLS material serves, so files are not read per request. */
const AUTH_TTL_MS = 5_000;

/** The connection `paths` (one file, or a $KUBECONFIG-style list merged as kubectl does) describe. */
export function kubeconfigConnection(paths: string, context?: string): KubeConnection {
  const files = paths
    .split(delimiter)
    .filter((path) => path !== '')
    .map((path) => resolve(path));
  const source = files.join(delimiter);
  const config = new KubeConfig();
  try {
    // As kubectl merges $KUBECONFIG: the first file that sets a value wins, the current context included.
    for (const [index, file] of files.entries()) {
      if (index === 0) {
        config.loadFromFile(file);
        continue;
      }
      const next = new KubeConfig();
      next.loadFromFile(file);
      config.mergeConfig(next);
    }
  } catch (error) {
    // client-node's message may quote the file, which holds tokens and keys: only its first line.
    const detail = error instanceof Error ? (error.message.split('\n')[0] ?? '') : String(error);
    throw new KubeConfigError(source, 'file', `cannot load the kubeconfig: ${detail.slice(0, 200)}`);
  }
  if (context !== undefined) {
    if (config.getContextObject(context) === null) {
      throw new KubeConfigError(source, 'context', `no context named "${context}"`);
    }
    config.setCurrentContext(context);
  }
  return kubeConfigConnection(config, source);
}

/** The connection of a loaded `KubeConfig`'s current context. */
export function kubeConfigConnection(config: KubeConfig, source: string): KubeConnection {
  const cluster = config.getCurrentCluster();
  if (cluster === null) {
    throw new KubeConfigError(
      source,
      'current-context',
      'names no cluster: pass --context or set current-context',
    );
  }
  let cached: { auth: KubeAuth; at: number } | undefined;
  // One load at a time: the requests of a starting operator all ask at once, and each load of its own would
  // run an exec plugin again and hand out a TLS object of its own, which a client takes for new TLS material.
  let loading: Promise<KubeAuth> | undefined;
  const auth = async (): Promise<KubeAuth> => {
    if (cached && Date.now() - cached.at < AUTH_TTL_MS) return cached.auth;
    loading ??= authOf(config, source, cached?.auth.tls)
      .then((fresh) => {
        cached = { auth: fresh, at: Date.now() };
        return fresh;
      })
      .finally(() => {
        loading = undefined;
      });
    return loading;
  };
  return {
    server: cluster.server,
    source,
    namespace: config.getContextObject(config.getCurrentContext())?.namespace,
    proxyUrl: cluster.proxyUrl,
    auth,
  };
}

/** Headers and TLS material as client-node applies them; the TLS object is kept while its content is. */
async function authOf(config: KubeConfig, source: string, previous: KubeTls | undefined): Promise<KubeAuth> {
  const options: RequestOptions = { headers: {} };
  try {
    await config.applyToHTTPSOptions(options);
  } catch (error) {
    // An exec plugin's or auth provider's own words may include what it printed: the first line only.
    const detail = error instanceof Error ? (error.message.split('\n')[0] ?? '') : String(error);
    throw new KubeCredentialError(source, `credentials: ${detail.slice(0, 300)}`);
  }
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(options.headers ?? {})) {
    if (typeof value === 'string') headers[name.toLowerCase()] = value;
  }
  if (typeof options.auth === 'string')
    headers.authorization = `Basic ${Buffer.from(options.auth).toString('base64')}`;
  const tls: KubeTls = {
    ...(options.ca === undefined ? {} : { ca: text(options.ca) }),
    ...(options.cert === undefined ? {} : { cert: text(options.cert) }),
    ...(options.key === undefined ? {} : { key: text(options.key) }),
    rejectUnauthorized: options.rejectUnauthorized !== false,
    ...(options.servername === undefined ? {} : { servername: options.servername }),
  };
  return { headers, tls: previous && sameTls(previous, tls) ? previous : tls };
}

function text(value: unknown): string {
  if (typeof value === 'string') return value;
  if (Buffer.isBuffer(value)) return value.toString('utf8');
  if (Array.isArray(value)) return value.map(text).join('\n');
  return String(value);
}

function sameTls(a: KubeTls, b: KubeTls): boolean {
  return (
    a.ca === b.ca &&
    a.cert === b.cert &&
    a.key === b.key &&
    a.rejectUnauthorized === b.rejectUnauthorized &&
    a.servername === b.servername
  );
}
