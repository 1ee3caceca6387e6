import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Failure } from '../../src/api/outcome.ts';
import { fullJitterMs, parseRetryAfterMs, planRetry, type RetryPolicy } from '../../src/api/retry.ts';
import { createThing, getThing } from '../support/sample-operations.ts';

const policy: RetryPolicy = { maxRetries: 3, baseDelayMs: 100, maxDelayMs: 1_000, maxRetryAfterMs: 10_000 };

const refused: Failure = {
  kind: 'network',
  timedOut: false,
  reachedServer: false,
  detail: 'ECONNREFUSED',
  cause: null,
};
const reset: Failure = {
  kind: 'network',
  timedOut: false,
  reachedServer: true,
  detail: 'other side closed',
  cause: null,
};
const timedOut: Failure = {
  kind: 'network',
  timedOut: true,
  reachedServer: true,
  detail: 'timeout',
  cause: null,
};
const api = (httpStatus: number, code: number | null, retryAfterMs?: number): Failure => ({
  kind: 'api',
  httpStatus,
  code,
  serviceMessage: '',
  retryAfterMs,
});

test('full jitter stays within [0, min(max, base × 2^n)]', () => {
  assert.equal(
    fullJitterMs(policy, 0, () => 0),
    0,
  );
  assert.equal(
    fullJitterMs(policy, 0, () => 0.999),
    99,
  );
  assert.equal(
    fullJitterMs(policy, 2, () => 0.5),
    200,
  );
  assert.equal(
    fullJitterMs(policy, 10, () => 0.999),
    999,
  );
});

test('Retry-After is read as seconds or as an HTTP date; anything else is ignored', () => {
  const now = Date.parse('2025-01-01T00:00:00Z');
  assert.equal(parseRetryAfterMs('3', now), 3_000);
  assert.equal(parseRetryAfterMs('Wed, 01 Jan 2025 00:00:10 GMT', now), 10_000);
  assert.equal(parseRetryAfterMs('Tue, 31 Dec 2024 23:00:00 GMT', now), 0);
  assert.equal(parseRetryAfterMs('soon', now), undefined);
  assert.equal(parseRetryAfterMs(undefined, now), undefined);
});

test('which failures are retried, for an idempotent operation and for a create', () => {
  const reasons = (failure: Failure) =>
    [getThing, createThing].map((op) => planRetry(op, failure, 0, policy, () => 0)?.reason ?? 'no');

  assert.deepEqual(reasons(refused), ['network', 'network']);
  assert.deepEqual(reasons(api(429, null)), ['rate_limited', 'rate_limited']);
  assert.deepEqual(reasons(reset), ['network', 'no']);
  assert.deepEqual(reasons(timedOut), ['timeout', 'no']);
  assert.deepEqual(reasons(api(500, 10002)), ['server_error', 'no']);
  assert.deepEqual(reasons(api(502, null)), ['server_error', 'no']);
  assert.deepEqual(reasons(api(500, 10001)), ['no', 'no']);
  assert.deepEqual(reasons(api(200, 12002)), ['no', 'no']);
  assert.deepEqual(reasons(api(400, 10001)), ['no', 'no']);
  assert.deepEqual(reasons(api(401, null)), ['no', 'no']);
  assert.deepEqual(reasons({ kind: 'shape', httpStatus: 200, code: null, problem: 'not JSON', issues: [] }), [
    'no',
    'no',
  ]);
});

test('retries stop at maxRetries, and Retry-After sets the delay unless it exceeds the cap', () => {
  assert.equal(planRetry(getThing, refused, 3, policy), undefined);
  assert.equal(planRetry(getThing, api(429, null, 4_000), 0, policy, () => 0)?.delayMs, 4_000);
  assert.equal(planRetry(getThing, api(429, null, 20_000), 0, policy), undefined);
});
