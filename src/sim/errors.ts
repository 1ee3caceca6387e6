import { ApiCode } from '../api/codes.ts';

/**
 * A failure the simulated service answers with: the envelope's code and message, and the HTTP
 * status it travels with. Business errors travel with HTTP 200, as the service's may: callers must
 * decide by `code` (docs/design.md §4).
 */
export class SimError extends Error {
  readonly code: ApiCode;
  readonly httpStatus: number;

  constructor(code: ApiCode, message: string, httpStatus = 200) {
    super(message);
    this.name = 'SimError';
    this.code = code;
    this.httpStatus = httpStatus;
  }
}

/** A request the service rejects as invalid (HTTP 400, code 10001). */
export function invalid(message: string): SimError {
  return new SimError(ApiCode.InvalidRequest, message, 400);
}

/** Nothing with this id exists in the caller's organisation. */
export function notFound(code: ApiCode, what: string, id: string): SimError {
  return new SimError(code, `${what} ${id} does not exist`);
}

/** The request is valid but no machine is free for it now (retryable). */
export function noCapacity(what: string): SimError {
  return new SimError(
    ApiCode.NoCapacity,
    `no capacity for ${what} right now; retry later or choose another region`,
  );
}
