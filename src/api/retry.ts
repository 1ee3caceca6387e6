import { failureKind } from './codes.ts';
import type { Operation } from './operation.ts';
import type { ApiFailure, Failure } from './outcome.ts';

export interface RetryPolicy {
  /** Attempts after the first one; 0 disables retries. */
  readonly maxRetries: number;
  /** Ceiling of the first backoff; it doubles per retry up to `maxDelayMs`. */
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
  /**
   * Longest `Retry-After` a call waits out. A longer one fails the call with the wait in
   * `CloudApiError.retryAfterMs`: the caller can requeue instead of holding a call open, and
   * retrying earlier than the service asked would only be refused again.
   */
  readonly maxRetryAfterMs: number;
}

/** Label values of `gpucloud_api_retries_total{reason}`. */
export type RetryReason = 'network' | 'timeout' | 'server_error' | 'rate_limited' | 'key_rotated';

export interface RetryPlan {
  readonly reason: RetryReason;
  readonly delayMs: number;
}

/**
 * Whether and when to repeat a failed attempt. Only transport-level trouble is retried here
 * (network, timeout, 5xx, 429): it tends to clear within seconds. A business failure that is
 * transient (no capacity, serverless unavailable) surfaces as a retryable `CloudApiError`, and the
 * caller's own, slower backoff decides — a call must not sit in a loop waiting for capacity.
 */
export function planRetry(
  op: Operation,
  failure: Failure,
  retriesSoFar: number,
  policy: RetryPolicy,
  random: () => number = Math.random,
): RetryPlan | undefined {
  if (retriesSoFar >= policy.maxRetries) return undefined;
  const reason = retryReason(op, failure);
  if (reason === undefined) return undefined;
  const backoff = fullJitterMs(policy, retriesSoFar, random);
  const asked = failure.kind === 'api' ? failure.retryAfterMs : undefined;
  if (asked === undefined) return { reason, delayMs: backoff };
  if (asked > policy.maxRetryAfterMs) return undefined;
  return { reason, delayMs: Math.max(backoff, asked) };
}

/**
 * A create is repeated only when the service provably did not act on it: the request never left
 * (refused connection, DNS failure, connect timeout) or the service rate-limited it (429 means "not
 * processed"). After a 5xx, a timeout or a reset once the request was sent, the resource may exist,
 * and a second attempt could make a second, billed one.
 *
 * Every other operation of this API is safe to repeat. Gets and lists only read. Delete, terminate,
 * pause, resume, stop and start drive a resource towards a state: when a first attempt already took
 * effect, the repeat finds it there and answers not-found (delete) or wrong-state (11001, 12001),
 * which a caller settles by re-reading the resource — never a second effect. Rename (PATCH) and
 * scale (PUT with a count) set absolute values. Anything that makes something new (the v1 and v2
 * creates, and task submit) must be flagged `creates` in the operation table.
 */
function retryReason(op: Operation, failure: Failure): RetryReason | undefined {
  switch (failure.kind) {
    case 'network': {
      if (failure.reachedServer && op.creates) return undefined;
      return failure.timedOut ? 'timeout' : 'network';
    }
    case 'api':
      return apiRetryReason(op, failure);
    case 'shape':
      return undefined;
  }
}

function apiRetryReason(op: Operation, failure: ApiFailure): RetryReason | undefined {
  if (failure.httpStatus === 429) return 'rate_limited';
  // A 5xx carrying a code that is known not to be transient (say 10001) is the service's answer.
  const serverError =
    failure.httpStatus >= 500 && failureKind(failure.code, failure.httpStatus) === 'transient';
  return serverError && !op.creates ? 'server_error' : undefined;
}

/**
 * "Full jitter": uniform in [0, min(max, base·2^n)]. Clients that failed together (a blip in the
 * service) spread out instead of returning in lockstep.
 */
export function fullJitterMs(policy: RetryPolicy, retriesSoFar: number, random: () => number): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** retriesSoFar);
  return Math.floor(random() * ceiling);
}

/** `Retry-After` is either delay-seconds or an HTTP date (RFC 9110 §10.2.3); anything else is ignored. */
export function parseRetryAfterMs(value: string | undefined, now: number = Date.now()): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const date = Date.parse(text);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}
