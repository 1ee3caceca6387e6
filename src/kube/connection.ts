// How the operator reaches the apiserver: the loader that picks a kubeconfig or the pod's service account,
// and the HTTP agent with the connection's TLS settings. The types every client shares and the errors of
// loading live in connection-types.ts, which both sources import; they are re-exported here, the one place
// the rest of the code imports them from.
import { statSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import type { Dispatcher } from '../undici.ts';
import { Agent, buildConnector, proxyAgent } from '../undici.ts';
import type { KubeConnection, KubeTls } from './connection-types.ts';

export type { KubeAuth, KubeConnection, KubeTls } from './connection-types.ts';
export { KubeConfigError, KubeCredentialError } from './connection-types.ts';

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
