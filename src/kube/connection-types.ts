// What a connection to the apiserver is, and the errors of obtaining one: shared by the loader
// (connection.ts) and the two places a connection comes from (kubeconfig.ts, in-cluster.ts). It imports
// nothing, so those can all import it without importing each other.

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
  /**
   * Headers and TLS settings for the next request. Concurrent callers share one load, and the `tls` object
   * stays the same while its content does: a client rebuilds its connection pool only when it changes.
   */
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
