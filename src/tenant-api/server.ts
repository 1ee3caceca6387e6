// The tenant API's HTTPS server: authentication by the front proxy's certificate, discovery, then for each
// request a SubjectAccessReview before anything about the named resource is read.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { KubeClient } from '../kube/client.ts';
import type { Logger } from '../lib/logger.ts';
import type { AccountDirectory } from '../managed/accounts/accounts.ts';
import { type Authorizer, forbiddenMessage } from '../serving/authorizer.ts';
import { asServingError, type Ended } from '../serving/failures.ts';
import { MAX_REQUEST_TIMEOUT_MS } from '../serving/query.ts';
import { ServingError, sendError, sendJson } from '../serving/status.ts';
import { discardBody } from './body.ts';
import { authenticate, type RequestHeaderSettings } from './front-proxy.ts';
import { discoveryDocument } from './group.ts';
import { handle } from './handlers.ts';
import type { TenantLimits } from './limits.ts';
import type { TenantApiMetrics } from './metrics.ts';
import { openApiDocument } from './openapi.ts';
import { parseRequest } from './request-path.ts';
import { resolveTarget } from './targets.ts';

export interface TenantApiServerOptions {
  readonly port: number;
  readonly host?: string;
  /** The serving pair, PEM. */
  readonly tls: { readonly certPem: string; readonly keyPem: string };
  /** The front proxy's settings, read from kube-system when the server starts and now and then after. */
  readonly requestHeader: RequestHeaderSettings;
  readonly authorizer: Authorizer;
  /** The operator's own client: it reads the named resource once the request is authorised. */
  readonly kube: KubeClient;
  readonly accounts: AccountDirectory;
  readonly limits: TenantLimits;
  readonly metrics: TenantApiMetrics;
  /** Whether this replica serves: only the leader, whose accounts and request budgets are the live ones. */
  readonly serving: () => boolean;
  readonly followPollMs: number;
  readonly log: Logger;
  /** How long a request's headers, and the whole request, may take to arrive (the defaults serve the apiserver). */
  readonly timeouts?: { readonly headersMs: number; readonly requestMs: number } | undefined;
}

/**
 * A client that sends its headers or its body slowly holds its connection no longer than this; Node then
 * answers 408 and closes it. Only the request's arrival is timed: a followed log streams for as long as
 * its reader stays.
 */
const TIMEOUTS = { headersMs: 10_000, requestMs: 20_000 };

export class TenantApiServer {
  readonly #options: TenantApiServerOptions;
  readonly #server: Server;
  #requestHeader: RequestHeaderSettings;
  #tls: { readonly certPem: string; readonly keyPem: string };

  constructor(options: TenantApiServerOptions) {
    this.#options = options;
    this.#requestHeader = options.requestHeader;
    this.#tls = options.tls;
    const timeouts = options.timeouts ?? TIMEOUTS;
    // The client certificate is asked for but checked per request, so that a request without one gets a
    // 401 that says why rather than a failed handshake.
    this.#server = createServer(
      {
        cert: options.tls.certPem,
        key: options.tls.keyPem,
        ca: options.requestHeader.caPem,
        requestCert: true,
        rejectUnauthorized: false,
        minVersion: 'TLSv1.2',
        headersTimeout: timeouts.headersMs,
        requestTimeout: timeouts.requestMs,
        // How often those are checked: at most this late.
        connectionsCheckingInterval: Math.min(1_000, timeouts.headersMs),
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

  /** Settings read again: a rotated front-proxy CA or serving pair applies to new connections. */
  update(settings: RequestHeaderSettings, tls: { readonly certPem: string; readonly keyPem: string }): void {
    const changed =
      settings.caPem !== this.#requestHeader.caPem ||
      tls.certPem !== this.#tls.certPem ||
      tls.keyPem !== this.#tls.keyPem;
    this.#requestHeader = settings;
    this.#tls = tls;
    if (changed) {
      this.#server.setSecureContext({
        cert: tls.certPem,
        key: tls.keyPem,
        ca: settings.caPem,
        minVersion: 'TLSv1.2',
      });
    }
  }

  /** Stops accepting, and ends the streams in flight (their clients see the log end). */
  async close(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.#server.close(() => resolve()));
    this.#server.closeAllConnections();
    await closed;
  }

  async #serve(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const { metrics, log } = this.#options;
    const gone = new AbortController();
    response.on('close', () => gone.abort());
    let deadline: { signal: AbortSignal; ms: number } | undefined;
    let resource = 'unknown';
    let verb = request.method ?? '';
    try {
      const identity = authenticate(request, this.#requestHeader);
      if ('refused' in identity) {
        metrics.refused('unauthenticated');
        throw new ServingError(401, `Unauthorized: ${identity.refused}`);
      }
      const path = URL.parse(request.url ?? '/', 'https://x')?.pathname ?? '';
      // What the aggregator and clients read about the API, open to any user the apiserver sends.
      const discovery =
        request.method === 'GET' ? (discoveryDocument(path) ?? openApiDocument(path)) : undefined;
      if (discovery) {
        resource = 'discovery';
        sendJson(response, 200, discovery);
        return;
      }
      const parsed = parseRequest(request.method ?? '', request.url ?? '/');
      const { attributes } = parsed;
      resource = `${attributes.resource}/${attributes.subresource}`;
      verb = attributes.verb;
      // A log is long-running, as `pods/log` is to the apiserver: no deadline. Anything else has one.
      if (attributes.subresource !== 'log') {
        const ms = parsed.standard.timeout ?? MAX_REQUEST_TIMEOUT_MS;
        deadline = { signal: AbortSignal.timeout(ms), ms };
      }
      const decision = await this.#options.authorizer.authorize(identity.user, attributes);
      if (!decision.allowed) throw new ServingError(403, forbiddenMessage(identity.user, attributes));
      if (!this.#options.serving()) {
        throw new ServingError(
          503,
          'this replica is not the leader; the API is served by the leader only',
          1,
        );
      }
      const target = await resolveTarget(
        this.#options.kube,
        this.#options.accounts,
        parsed.subresource,
        attributes.namespace,
        attributes.name,
      );
      await handle({
        request: parsed,
        target,
        user: identity.user,
        limits: this.#options.limits,
        signal: deadline ? AbortSignal.any([gone.signal, deadline.signal]) : gone.signal,
        followPollMs: this.#options.followPollMs,
        incoming: request,
        response,
      });
    } catch (error) {
      const ended: Ended = gone.signal.aborted
        ? 'client-gone'
        : deadline?.signal.aborted
          ? { deadlineMs: deadline.ms }
          : undefined;
      const failure = asServingError(error, ended);
      if (failure.code >= 500) log.warn({ err: error, resource, verb }, 'tenant API request failed');
      // The answer waits for the body to be read and thrown away, so the connection serves the next
      // request; a body past the bound, or one that never arrives, has its connection closed instead.
      if (!response.headersSent && !request.readableEnded && !(await discardBody(request)))
        response.setHeader('connection', 'close');
      sendError(response, failure);
    } finally {
      metrics.answered(resource, verb, response.statusCode);
      log.debug(
        { method: request.method, path: request.url, code: response.statusCode },
        'tenant API request',
      );
    }
  }
}
