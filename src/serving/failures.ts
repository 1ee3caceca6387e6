// What a failed request answers its caller. The cloud's own words (its messages, the codes it uses) stay in
// the operator's log: a caller reads a stable message of ours that says whose failure it is and what to do.
// A 5xx means the cloud or the operator failed, never the caller's request.
import {
  CloudApiError,
  GpuCloudError,
  RequestValidationError,
  ResponseShapeError,
  TransportError,
} from '../api/errors.ts';
import { ServingError } from './status.ts';

/** Why the request's own signal fired, when it did: the client left, or the request's deadline passed. */
export type Ended = 'client-gone' | { readonly deadlineMs: number } | undefined;

export function asServingError(error: unknown, ended: Ended): ServingError {
  if (error instanceof ServingError) return error;
  if (ended === 'client-gone') return new ServingError(499, 'the client went away');
  if (ended !== undefined) {
    return new ServingError(
      504,
      `the request did not complete within its timeout of ${ended.deadlineMs / 1000}s`,
    );
  }
  if (error instanceof GpuCloudError) return cloudFailure(error);
  return new ServingError(500, 'internal error in the operator; its log has the details');
}

function cloudFailure(error: GpuCloudError): ServingError {
  const operation = error.operation;
  if (error instanceof RequestValidationError) {
    // The edge checks every value before a call; a value it let through is refused by our own client,
    // and nothing was sent. The request is what is wrong, not the cloud.
    return new ServingError(
      400,
      `a value of the request is outside what ${operation} accepts; nothing was sent`,
    );
  }
  if (error instanceof CloudApiError) {
    if (error.retryable) return busy(operation);
    if (error.kind === 'notFound')
      return new ServingError(404, `the GPU cloud has no object for this resource any more (${operation})`);
    if (error.kind === 'conflict') {
      return new ServingError(
        409,
        `the GPU cloud object is not in a state that allows ${operation} now; retry when it changes`,
      );
    }
    return new ServingError(502, `the GPU cloud refused ${operation} (HTTP ${error.httpStatus})`);
  }
  if (error instanceof TransportError) {
    if (error.reason === 'closed') return new ServingError(503, 'the operator is stopping; retry shortly', 5);
    return new ServingError(503, `the GPU cloud did not answer ${operation} in time; retry shortly`, 5);
  }
  if (error instanceof ResponseShapeError)
    return new ServingError(502, `the GPU cloud answered ${operation} in a form the operator cannot read`);
  return busy(operation);
}

function busy(operation: string): ServingError {
  return new ServingError(503, `the GPU cloud is unavailable or busy (${operation}); retry shortly`, 5);
}
