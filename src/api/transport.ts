import { request as exchange, Pool } from '../undici.ts';
import type { HttpMethod } from './operation.ts';
import type { NetworkFailure } from './outcome.ts';

/** A request in wire form, ready to send; `path` is relative to the base URL and carries the query. */
export interface WireRequest {
  readonly method: HttpMethod;
  readonly path: string;
  /** JSON text, or undefined for no body. */
  readonly body: string | undefined;
}

export interface HttpResponse {
  readonly kind: 'response';
  readonly status: number;
  readonly retryAfter: string | undefined;
  readonly body: string;
}

export interface TransportOptions {
  readonly baseUrl: URL;
  /** The key to send, read at each request: it may be rotated. */
  readonly apiKey: () => string;
  /** Most sockets kept open to the service; they are reused (keep-alive) across calls. */
  readonly connections: number;
  readonly connectTimeoutMs: number;
  /** Longest wait for the response headers once the request is sent, and longest silence within a body. */
  readonly requestTimeoutMs: number;
}

/**
 * Errors raised before the request was written to a socket: repeating such a request is safe even
 * for a create. Anything else (reset, timeout after sending) may have reached the service.
 */
const neverSentCodes = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_CONNECT_TIMEOUT',
]);

/** Undici arms these only after the request is on a connected socket, so they imply it may have arrived. */
const timeoutCodes = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);

/** One HTTP exchange with the service over a pool of keep-alive connections. Knows nothing of envelopes. */
export class Transport {
  readonly origin: string;
  readonly #pool: Pool;
  readonly #pathPrefix: string;
  readonly #apiKey: () => string;

  constructor(options: TransportOptions) {
    this.origin = options.baseUrl.origin;
    this.#pathPrefix = options.baseUrl.pathname.replace(/\/+$/, '');
    this.#apiKey = options.apiKey;
    this.#pool = new Pool(this.origin, {
      connections: options.connections,
      connectTimeout: options.connectTimeoutMs,
      headersTimeout: options.requestTimeoutMs,
      bodyTimeout: options.requestTimeoutMs,
    });
  }

  /** Sends one request; an unusable connection comes back as a `NetworkFailure`, never as a throw. */
  async send(request: WireRequest): Promise<HttpResponse | NetworkFailure> {
    try {
      const response = await exchange(this.#pool, {
        method: request.method,
        path: this.#pathPrefix + request.path,
        headers: this.#headers(request.body !== undefined),
        body: request.body,
      });
      const body = await response.body.text();
      return {
        kind: 'response',
        status: response.statusCode,
        retryAfter: first(response.headers['retry-after']),
        body,
      };
    } catch (error) {
      return networkFailure(error);
    }
  }

  /** Lets requests in flight finish, then closes every connection. */
  close(): Promise<void> {
    return this.#pool.close();
  }

  #headers(hasBody: boolean): Record<string, string> {
    const headers: Record<string, string> = { accept: 'application/json', 'x-api-key': this.#apiKey() };
    if (hasBody) headers['content-type'] = 'application/json';
    return headers;
  }
}

function networkFailure(error: unknown): NetworkFailure {
  const code = errorCode(error);
  const message = error instanceof Error ? error.message : String(error);
  return {
    kind: 'network',
    timedOut: code !== undefined && timeoutCodes.has(code),
    reachedServer: !neverSent(error),
    detail: code === undefined || message.includes(code) ? message : `${code} ${message}`,
    cause: error,
  };
}

/** A failed multi-address connect comes as an AggregateError: it never left if none of its attempts did. */
function neverSent(error: unknown): boolean {
  if (error instanceof AggregateError) return error.errors.length > 0 && error.errors.every(neverSent);
  const code = errorCode(error);
  return code !== undefined && neverSentCodes.has(code);
}

function errorCode(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null || !('code' in error)) return undefined;
  return typeof error.code === 'string' ? error.code : undefined;
}

function first(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}
