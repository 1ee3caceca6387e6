// Failures answered as the apiserver answers them: a `Status` object, so kubectl prints its message.
import type { ServerResponse } from 'node:http';

const REASONS: Readonly<Record<number, string>> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  405: 'MethodNotAllowed',
  408: 'Timeout',
  409: 'AlreadyExists',
  429: 'TooManyRequests',
  500: 'InternalError',
  502: 'BadGateway',
  503: 'ServiceUnavailable',
  504: 'Timeout',
};

/** A request the operator's server refuses or cannot serve, with what the caller needs to act. */
export class ServingError extends Error {
  override readonly name = 'ServingError';
  readonly code: number;
  /** Seconds after which the same request may succeed (429, 503). */
  readonly retryAfterSeconds: number | undefined;

  constructor(code: number, message: string, retryAfterSeconds?: number) {
    super(message);
    this.code = code;
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

export function statusBody(code: number, message: string): object {
  return {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message,
    reason: REASONS[code] ?? 'Unknown',
    code,
  };
}

/** `body` as JSON; indented when the request asked `?pretty=true`, as Kubernetes' servers do. */
export function sendJson(response: ServerResponse, code: number, body: unknown, pretty = false): void {
  const text = pretty ? `${JSON.stringify(body, null, 2)}\n` : JSON.stringify(body);
  response.writeHead(code, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
  });
  response.end(text);
}

export function sendError(response: ServerResponse, error: ServingError): void {
  if (response.headersSent) {
    // A stream already under way: all that is left is to end it.
    response.end();
    return;
  }
  if (error.retryAfterSeconds !== undefined)
    response.setHeader('retry-after', String(error.retryAfterSeconds));
  sendJson(response, error.code, statusBody(error.code, error.message));
}
