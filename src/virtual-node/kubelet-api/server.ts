// One virtual node's kubelet API: an HTTPS server on the port the node names in its `daemonEndpoints`,
// answering as its kubelet does, for its own Pods only. Each request is authenticated by its client
// certificate or its bearer token, and authorised by a SubjectAccessReview of the kubelet's attributes on
// the node.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Logger } from '../../lib/logger.ts';
import type { Authorizer } from '../../serving/authorizer.ts';
import { asServingError } from '../../serving/failures.ts';
import { ServingError, sendJson, statusBody } from '../../serving/status.ts';
import type { User } from '../../serving/user.ts';
import type { AccountEntries } from '../node-controller.ts';
import type { NodeUsage, WatchedPods } from '../node-usage.ts';
import type { TokenAuthenticator } from './bearer-token.ts';
import { authenticateClientCertificate } from './client-certificate.ts';
import { containerLogs } from './container-logs.ts';
import { RESOURCE_METRICS_CONTENT_TYPE, resourceMetrics } from './resource-metrics.ts';
import { type RoutedRequest, routeRequest, type Streaming } from './routes.ts';
import { statsSummary } from './stats-summary.ts';

export interface ServingTls {
  readonly certPem: string;
  readonly keyPem: string;
  /** The CA that signs the apiserver's client certificate for kubelets. */
  readonly clientCaPem: string;
}

export interface KubeletApiServerOptions {
  /** The node served: requests for another node's Pods are refused. */
  readonly node: string;
  readonly port: number;
  readonly host?: string | undefined;
  readonly tls: ServingTls;
  readonly authorizer: Authorizer;
  readonly tokens: TokenAuthenticator;
  readonly pods: WatchedPods;
  readonly usage: (node: string) => Promise<NodeUsage>;
  readonly accounts: AccountEntries;
  readonly followPollMs: number;
  readonly log: Logger;
}

/** As the tenant API: a slow sender holds a connection no longer than this; a followed log streams on. */
const TIMEOUTS = { headersMs: 10_000, requestMs: 20_000 };

/** Answered for exec, attach, portForward and run: a cloud pod is reached by SSH, not through a kubelet. */
export function streamingRefusal(operation: Streaming, pod: string): string {
  return `${operation} is not supported on gpucloud nodes: the Pod runs as a GPU cloud pod; for a shell use "kubectl gpucloud ssh ${pod}"`;
}

export class KubeletApiServer {
  readonly #options: KubeletApiServerOptions;
  readonly #server: Server;

  constructor(options: KubeletApiServerOptions) {
    this.#options = options;
    // The client certificate is asked for but checked per request, so that a request without one gets a
    // 401 that says why rather than a failed handshake (as the kubelet does).
    this.#server = createServer(
      {
        cert: options.tls.certPem,
        key: options.tls.keyPem,
        ca: options.tls.clientCaPem,
        requestCert: true,
        rejectUnauthorized: false,
        minVersion: 'TLSv1.2',
        headersTimeout: TIMEOUTS.headersMs,
        requestTimeout: TIMEOUTS.requestMs,
        connectionsCheckingInterval: 1_000,
      },
      (request, response) => void this.#serve(request, response),
    );
  }

  get port(): number {
    return (this.#server.address() as AddressInfo | null)?.port ?? 0;
  }

  async start(): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.#server.once('error', reject);
      this.#server.listen(this.#options.port, this.#options.host, () => {
        this.#server.off('error', reject);
        resolve();
      });
    });
  }

  /** Stops accepting, and ends the streams in flight. */
  async close(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.#server.close(() => resolve()));
    this.#server.closeAllConnections();
    await closed;
  }

  async #serve(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const gone = new AbortController();
    response.on('close', () => gone.abort());
    let routed: RoutedRequest | undefined;
    try {
      const user = await this.#authenticate(request);
      const url = URL.parse(request.url ?? '/', 'https://x');
      routed = routeRequest(request.method ?? '', url?.pathname ?? '');
      if (!routed) throw new ServingError(405, `method ${request.method} is not allowed`);
      const { route } = routed;
      const { node } = this.#options;
      await this.#authorize(user, routed, node);
      // A Pod of another node is not this kubelet's, whichever node's port the caller came to.
      const inPod = 'pod' in route ? this.#options.pods.find(route.pod) : undefined;
      const found = inPod?.node === node ? inPod : undefined;
      if (route.kind === 'streaming') {
        throw new ServingError(
          405,
          streamingRefusal(route.operation, `${route.pod.namespace}/${route.pod.name}`),
        );
      }
      if (route.kind === 'containerLogs') {
        if (!found) throw new ServingError(404, `pod "${route.pod.name}" does not exist`);
        await containerLogs({
          pod: found.pod,
          config: found.config,
          container: route.container,
          query: url?.searchParams ?? new URLSearchParams(),
          accounts: this.#options.accounts,
          followPollMs: this.#options.followPollMs,
          signal: gone.signal,
          response,
        });
        return;
      }
      if (route.kind === 'statsSummary') {
        sendJson(response, 200, statsSummary(await this.#options.usage(node)));
        return;
      }
      if (route.kind === 'resourceMetrics') {
        const text = resourceMetrics(await this.#options.usage(node));
        response.writeHead(200, {
          'content-type': RESOURCE_METRICS_CONTENT_TYPE,
          'content-length': Buffer.byteLength(text),
        });
        response.end(text);
        return;
      }
      throw new ServingError(404, '404 page not found');
    } catch (error) {
      const failure = asServingError(error, gone.signal.aborted ? 'client-gone' : undefined);
      if (failure.code >= 500)
        this.#options.log.warn({ err: error, path: request.url }, 'kubelet API request failed');
      this.#answer(response, failure, routed?.route.kind === 'streaming');
    }
  }

  /** The caller, by its client certificate or else its bearer token, as a kubelet's authenticators go. */
  async #authenticate(request: IncomingMessage): Promise<User> {
    const certificate = authenticateClientCertificate(request);
    if ('user' in certificate) return certificate.user;
    const token = await this.#options.tokens.authenticate(request);
    if (token && 'user' in token) return token.user;
    throw new ServingError(401, `Unauthorized: ${token?.refused ?? certificate.refused}`);
  }

  /** Allowed when the review allows the request on `node`. */
  async #authorize(user: User, routed: RoutedRequest, node: string): Promise<void> {
    const decision = await this.#options.authorizer.authorize(user, {
      verb: routed.verb,
      group: '',
      namespace: '',
      resource: 'nodes',
      subresource: routed.subresource,
      name: node,
    });
    if (decision.allowed) return;
    throw new ServingError(
      403,
      `Forbidden (user=${user.name}, verb=${routed.verb}, resource=nodes, subresource=${routed.subresource})`,
    );
  }

  /**
   * A failure as the kubelet writes one: plain text, which the apiserver passes on as the message of its
   * own Status. A streaming request gets a Status, which kubectl's exec and port-forward decode and print.
   */
  #answer(response: ServerResponse, failure: ServingError, asStatus: boolean): void {
    if (response.headersSent) {
      response.end();
      return;
    }
    if (failure.retryAfterSeconds !== undefined)
      response.setHeader('retry-after', String(failure.retryAfterSeconds));
    if (asStatus) {
      sendJson(response, failure.code, statusBody(failure.code, failure.message));
      return;
    }
    const text = `${failure.message}\n`;
    response.writeHead(failure.code, {
      'content-type': 'text/plain; charset=utf-8',
      'content-length': Buffer.byteLength(text),
    });
    response.end(text);
  }
}
