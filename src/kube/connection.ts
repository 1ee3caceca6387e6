// How the operator reaches the apiserver: the types every client shares, the loader that picks a
// kubeconfig or the pod's service account, and the HTTP agent with the connection's TLS settings.
import { statSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import type { Dispatcher } from '../undici.ts';
import { Agent, buildConnector, proxyAgent } from '../undici.ts';

/** TLS settings of the connection to the apiserver; a new object whenever they change. */
export interface KubeTls {
  readonly ca?: string;
  readonly cert?: string;
  readonly key?: string;
  readonly rejectUnauthorized: boolean;
  /** Name checked against the serving certificate instead of the server URL's host. */
  readonly servername?: string;
}

/** What a request needs beyond its URL: obtained per request, so rotated credentials are used. */
export interface KubeAuth {
  readonly headers: Readonly<Record<string, string>>;
  readonly tls: KubeTls;
}

/** The apiserver and how to authenticate to it. */
export interface KubeConnection {
  /** Base URL, e.g. `https://10.0.0.1:443`; API paths are appended to it. */
  readonly server: string;
  /** Where it came from (a kubeconfig path, or `in-cluster`), for messages. */
  readonly source: string;
  /** The context's namespace, when a kubeconfig names one: the default of a user's commands. */
  readonly namespace?: string | undefined;
  /** An HTTP(S) proxy to reach the apiserver through (a kubeconfig's `proxy-url`). */
  readonly proxyUrl?: string | undefined;
  auth(): Promise<KubeAuth>;
}

/** A kubeconfig or the in-cluster environment cannot be used; names the offending field. */
export class KubeConfigError extends Error {
  readonly source: string;
  readonly field: string;

  constructor(source: string, field: string, detail: string, options?: ErrorOptions) {
    super(`${source}: ${field}: ${detail}`, options);
    this.name = 'KubeConfigError';
    this.source = source;
    this.field = field;
  }
}

/** Credentials could not be obtained for a request (token file unreadable, exec plugin failed). */
export class KubeCredentialError extends Error {
  readonly source: string;

  constructor(source: string, detail: string, options?: ErrorOptions) {
    super(`${source}: ${detail}`, options);
    this.name = 'KubeCredentialError';
    this.source = source;
  }
}

/**
 * An HTTP agent for the apiserver with these TLS settings, through `proxyUrl` when one is given.
 * Keep-alive probes start after 30 s, as client-go's do: undici's 60 s default races cloud load
 * balancers' idle timeouts.
 */
export function createKubeDispatcher(tls: KubeTls, proxyUrl?: string): Dispatcher {
  const options = { ...tls, keepAlive: true, keepAliveInitialDelay: 30_000 };
  if (proxyUrl !== undefined) return proxyAgent({ uri: proxyUrl, requestTls: options });
  const servername = tls.servername;
  if (servername === undefined) return new Agent({ connect: options });
  // undici prefers the request's host over a configured servername; tls-server-name must win.
  const connector = buildConnector(options);
  return new Agent({
    connect: (connectOptions, callback) => connector({ ...connectOptions, servername }, callback),
  });
}

export interface LoadKubeConnectionOptions {
  /** A kubeconfig file, or a `$KUBECONFIG`-style list of them (merged as kubectl merges them). */
  readonly kubeconfigPath?: string | undefined;
  /** The kubeconfig context to use instead of its current one. */
  readonly context?: string | undefined;
  readonly env?: NodeJS.ProcessEnv;
  readonly homeDir?: string;
}

/**
 * Loads the connection as kubectl does: the given kubeconfig, else `$KUBECONFIG`, else `~/.kube/config`
 * if it exists, else the pod's service account. A kubeconfig is read by client-node's `KubeConfig`,
 * imported only then: in a pod, the small service-account path keeps it out of the process.
 */
export async function loadKubeConnection(options: LoadKubeConnectionOptions = {}): Promise<KubeConnection> {
  const env = options.env ?? process.env;
  const home = join(options.homeDir ?? homedir(), '.kube', 'config');
  const paths = options.kubeconfigPath ?? env.KUBECONFIG ?? (isFile(home) ? home : undefined);
  if (paths?.split(delimiter).some((path) => path !== '')) {
    const { kubeconfigConnection } = await import('./kubeconfig.ts');
    return kubeconfigConnection(paths, options.context);
  }
  const { inClusterConnection } = await import('./in-cluster.ts');
  return inClusterConnection({ env });
}

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}
