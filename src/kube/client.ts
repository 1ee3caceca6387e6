import type { z } from 'zod';
import { type Dispatcher, request as send } from '../undici.ts';
import { createKubeDispatcher, type KubeConnection, type KubeTls } from './connection.ts';
import { statusSchema } from './object.ts';

export type KubeMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
export type QueryValue = string | number | boolean | undefined;

export interface KubeRequest {
  readonly method: KubeMethod;
  /** Absolute API path, e.g. `/api/v1/namespaces/default/configmaps`. */
  readonly path: string;
  readonly query?: Readonly<Record<string, QueryValue>>;
  readonly body?: unknown;
  /** Content type of a PATCH body; JSON merge patch unless told otherwise. */
  readonly patchType?:
    | 'application/merge-patch+json'
    | 'application/strategic-merge-patch+json'
    | 'application/json-patch+json'
    | 'application/apply-patch+yaml';
  readonly signal?: AbortSignal;
  /** Bound on the whole request; defaults to the client's `requestTimeoutMs`. */
  readonly timeoutMs?: number;
}

/** The apiserver answered with an error status; carries its `Status` reason and message. */
export class KubeApiError extends Error {
  readonly status: number;
  /** `metav1.StatusReason`, e.g. `NotFound`, `Conflict`, `Expired`, `Gone`. */
  readonly reason: string;
  readonly method: KubeMethod;
  readonly path: string;
  /** The Status message alone, as the apiserver wrote it. */
  readonly detail: string;

  constructor(method: KubeMethod, path: string, status: number, reason: string, detail: string) {
    super(`${method} ${path}: HTTP ${status} ${reason}: ${detail}`);
    this.name = 'KubeApiError';
    this.status = status;
    this.reason = reason;
    this.detail = detail;
    this.method = method;
    this.path = path;
  }
}

/** The request never got an answer: connection refused or reset, timeout, or a malformed response. */
export class KubeTransportError extends Error {
  readonly method: KubeMethod;
  readonly path: string;

  constructor(method: KubeMethod, path: string, detail: string, cause: unknown) {
    super(`${method} ${path}: ${detail}`, { cause });
    this.name = 'KubeTransportError';
    this.method = method;
    this.path = path;
  }
}

export function isStatus(err: unknown, status: number): err is KubeApiError {
  return err instanceof KubeApiError && err.status === status;
}

export interface KubeClientOptions {
  /** Bound on every non-watch request. */
  readonly requestTimeoutMs?: number;
}

/**
 * Minimal JSON client for the Kubernetes API on top of a `KubeConnection` (which supplies the
 * server, TLS material and credentials; see connection.ts).
 *
 * The runtime talks raw JSON rather than through client-node's typed APIs: list and watch must
 * yield the same shapes (the typed APIs turn timestamps into `Date` on list but not on watch), the
 * objects are kept in caches without conversion, and `Lease` micro-timestamps must keep their wire
 * format.
 */
/** The one call a part needs when it only sends requests: what a fake of the apiserver implements. */
export type KubeRequests = Pick<KubeClient, 'request'>;

export class KubeClient {
  readonly #connection: KubeConnection;
  readonly #requestTimeoutMs: number;
  #dispatcher: Dispatcher | undefined;
  // The TLS settings `#dispatcher` was made with: an exec plugin may hand out a new client certificate.
  #tls: KubeTls | undefined;

  constructor(connection: KubeConnection, options: KubeClientOptions = {}) {
    this.#connection = connection;
    this.#requestTimeoutMs = options.requestTimeoutMs ?? 30_000;
  }

  /** Sends a request and decodes the JSON answer with `schema`; errors are typed (see above). */
  async request<S extends z.ZodType>(schema: S, request: KubeRequest): Promise<z.output<S>> {
    const timeout = AbortSignal.timeout(request.timeoutMs ?? this.#requestTimeoutMs);
    const signal = request.signal ? AbortSignal.any([request.signal, timeout]) : timeout;
    let response: Dispatcher.ResponseData;
    let text: string;
    try {
      response = await this.#send(request, signal);
      text = await this.#readText(request, response);
    } catch (err) {
      if (timeout.aborted) this.resetConnections();
      throw err;
    }
    if (!succeeded(response)) throw apiError(request.method, request.path, response.statusCode, text);
    const decoded = schema.safeParse(parseJson(text));
    if (!decoded.success) {
      throw new KubeTransportError(request.method, request.path, 'unexpected response body', decoded.error);
    }
    return decoded.data;
  }

  /**
   * Opens a watch and yields each event's parsed JSON. Ends when the server closes the stream;
   * abort `signal` to stop early. Errors opening the watch are thrown as for `request`.
   */
  async *watch(
    path: string,
    query: Readonly<Record<string, QueryValue>>,
    signal: AbortSignal,
  ): AsyncGenerator<unknown> {
    for await (const line of this.lines(path, { ...query, watch: true }, signal, 'watch stream')) {
      if (line.trim() !== '') yield parseWatchLine(path, line);
    }
  }

  /**
   * A GET whose answer is read line by line as it arrives (a watch, a followed log), never whole. Ends
   * when the server closes the stream; abort `signal` to stop early. Errors opening it are thrown as for
   * `request`.
   */
  async *lines(
    path: string,
    query: Readonly<Record<string, QueryValue>>,
    signal: AbortSignal,
    what = 'stream',
  ): AsyncGenerator<string> {
    const request: KubeRequest = { method: 'GET', path, query };
    const response = await this.#send(request, signal);
    if (!succeeded(response)) {
      throw apiError('GET', path, response.statusCode, await this.#readText(request, response));
    }
    const decoder = new TextDecoder();
    let partial = '';
    try {
      for await (const chunk of response.body) {
        const lines = (partial + decoder.decode(chunk, { stream: true })).split('\n');
        partial = lines.pop() ?? '';
        yield* lines;
      }
    } catch (err) {
      throw err instanceof KubeTransportError
        ? err
        : new KubeTransportError('GET', path, `${what} broken`, err);
    }
    if (partial !== '') yield partial;
  }

  /**
   * Drops every pooled connection, so the next request dials afresh; requests still in flight on them
   * fail. Called when a connection may have gone silent (a stalled watch, a timed-out request): requests
   * are multiplexed over one HTTP/2 connection, and a dead one would otherwise swallow every retry too.
   */
  resetConnections(): void {
    const dispatcher = this.#dispatcher;
    this.#dispatcher = undefined;
    dispatcher?.destroy().catch(() => {});
  }

  async #send(request: KubeRequest, signal: AbortSignal): Promise<Dispatcher.ResponseData> {
    const auth = await this.#connection.auth();
    if (auth.tls !== this.#tls) {
      // New TLS material (an exec plugin's new client certificate): new requests dial with it, while the
      // old pool is closed gracefully, so the requests and watches in flight on it finish there. The
      // connection is healthy; nothing here calls for `resetConnections`, which fails them all.
      const previous = this.#dispatcher;
      this.#dispatcher = undefined;
      previous?.close().catch(() => {});
      this.#tls = auth.tls;
    }
    // Created again after `resetConnections`, with the same TLS settings, so the next request dials afresh.
    this.#dispatcher ??= createKubeDispatcher(auth.tls, this.#connection.proxyUrl);
    const dispatcher = this.#dispatcher;
    const headers: Record<string, string> = { ...auth.headers, accept: 'application/json' };
    let body: string | undefined;
    if (request.body !== undefined) {
      body = JSON.stringify(request.body);
      headers['content-type'] =
        request.method === 'PATCH'
          ? (request.patchType ?? 'application/merge-patch+json')
          : 'application/json';
    }
    try {
      const url = this.#url(request);
      return await send(dispatcher, {
        origin: url.origin,
        path: url.pathname + url.search,
        method: request.method,
        headers,
        body,
        signal,
      });
    } catch (err) {
      throw new KubeTransportError(request.method, request.path, describeFailure(err, signal), err);
    }
  }

  async #readText(request: KubeRequest, response: Dispatcher.ResponseData): Promise<string> {
    try {
      return await response.body.text();
    } catch (err) {
      throw new KubeTransportError(request.method, request.path, 'response body interrupted', err);
    }
  }

  #url(request: KubeRequest): URL {
    const url = new URL(this.#connection.server.replace(/\/+$/, '') + request.path);
    for (const [name, value] of Object.entries(request.query ?? {})) {
      if (value !== undefined) url.searchParams.set(name, String(value));
    }
    return url;
  }
}

function succeeded(response: Dispatcher.ResponseData): boolean {
  return response.statusCode >= 200 && response.statusCode < 300;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function parseWatchLine(path: string, line: string): unknown {
  try {
    return JSON.parse(line);
  } catch (err) {
    throw new KubeTransportError('GET', path, 'malformed watch event', err);
  }
}

function apiError(method: KubeMethod, path: string, status: number, body: string): KubeApiError {
  const decoded = statusSchema.safeParse(parseJson(body));
  const reason = (decoded.success && decoded.data.reason) || `HTTP${status}`;
  const message = (decoded.success && decoded.data.message) || body.slice(0, 200) || 'no message';
  return new KubeApiError(method, path, status, reason, message);
}

function describeFailure(err: unknown, signal: AbortSignal): string {
  if (signal.aborted) {
    return signal.reason instanceof DOMException && signal.reason.name === 'TimeoutError'
      ? 'timed out'
      : 'aborted';
  }
  const cause = err instanceof Error && err.cause instanceof Error ? err.cause.message : undefined;
  return `request failed: ${cause ?? (err instanceof Error ? err.message : String(err))}`;
}
