import {
  CloudApiError,
  type FieldIssue,
  type GpuCloudError,
  ResponseShapeError,
  TransportError,
} from './errors.ts';
import type { Operation } from './operation.ts';

/** What one HTTP attempt of a call came to; the retry policy and the metrics read it, errors are made from it. */
export type Outcome<T = unknown> = Success<T> | Failure;
export type Failure = NetworkFailure | ApiFailure | ShapeFailure;

export interface Success<T = unknown> {
  readonly kind: 'success';
  readonly httpStatus: number;
  /** The envelope's data, decoded to the application form. */
  readonly value: T;
}

/** No HTTP answer: the connection failed, dropped, or stayed silent past the timeout. */
export interface NetworkFailure {
  readonly kind: 'network';
  readonly timedOut: boolean;
  /** False only when the request provably never left (refused, unresolvable, connect timeout). */
  readonly reachedServer: boolean;
  readonly detail: string;
  readonly cause: unknown;
}

/** The service answered with a failure code, or with an error status and no envelope. */
export interface ApiFailure {
  readonly kind: 'api';
  readonly httpStatus: number;
  readonly code: number | null;
  readonly serviceMessage: string;
  /** From `Retry-After`, when the service sent one. */
  readonly retryAfterMs: number | undefined;
}

/** The service answered success, but not in a form this client can read. */
export interface ShapeFailure {
  readonly kind: 'shape';
  readonly httpStatus: number;
  readonly code: number | null;
  readonly problem: string;
  readonly issues: readonly FieldIssue[];
}

/**
 * The `code` label of `gpucloud_api_requests_total`: the envelope code when there was one,
 * else `http_<status>`, else `network` or `timeout`. Bounded, and never derived from secrets.
 */
export function outcomeLabel(outcome: Outcome): string {
  switch (outcome.kind) {
    case 'success':
      return '10000';
    case 'network':
      return outcome.timedOut ? 'timeout' : 'network';
    case 'api':
    case 'shape':
      return outcome.code === null ? `http_${outcome.httpStatus}` : String(outcome.code);
  }
}

/** False only when the service provably did not act on the attempt. */
export function mayHaveTakenEffect(failure: Failure): boolean {
  switch (failure.kind) {
    case 'network':
      return failure.reachedServer;
    case 'api':
      return failure.httpStatus >= 500;
    case 'shape':
      return true;
  }
}

export interface CallContext {
  readonly op: Operation;
  readonly origin: string;
  readonly attempts: number;
  /** Whether any attempt of the call may have taken effect, not only the last. */
  readonly mayHaveTakenEffect: boolean;
}

/** The error a call throws when its last attempt failed this way. */
export function failureError(failure: Failure, call: CallContext): GpuCloudError {
  const { op, attempts } = call;
  switch (failure.kind) {
    case 'network':
      return new TransportError({
        operation: op.name,
        creates: op.creates,
        reason: failure.timedOut ? 'timeout' : 'network',
        detail: failure.detail,
        origin: call.origin,
        attempts,
        mayHaveTakenEffect: call.mayHaveTakenEffect,
        cause: failure.cause,
      });
    case 'api':
      return new CloudApiError({
        operation: op.name,
        creates: op.creates,
        httpStatus: failure.httpStatus,
        code: failure.code,
        serviceMessage: failure.serviceMessage,
        attempts,
        retryAfterMs: failure.httpStatus === 429 ? failure.retryAfterMs : undefined,
      });
    case 'shape':
      return new ResponseShapeError({
        operation: op.name,
        httpStatus: failure.httpStatus,
        problem: failure.problem,
        issues: failure.issues,
      });
  }
}
