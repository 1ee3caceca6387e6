import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ApiCode } from '../../src/api/codes.ts';
import {
  CloudApiError,
  RequestValidationError,
  ResponseShapeError,
  TransportError,
} from '../../src/api/errors.ts';
import { asServingError } from '../../src/serving/failures.ts';
import { ServingError } from '../../src/serving/status.ts';

// What a tenant reads when a request fails: our words, with the code that says whose failure it is.
const CLOUD_WORDS = 'query.limit: at most 1000 lines per page (secret-ish cloud detail)';

const cloud = (httpStatus: number, code: number | null) =>
  new CloudApiError({
    operation: 'pods.logs',
    creates: false,
    httpStatus,
    code,
    serviceMessage: CLOUD_WORDS,
    attempts: 1,
  });

test('a cloud or client error is a stable message of ours, never the cloud text', () => {
  const cases: [unknown, number, RegExp][] = [
    [cloud(400, 10001), 502, /^the GPU cloud refused pods\.logs \(HTTP 400\)$/],
    [cloud(500, 10002), 503, /^the GPU cloud is unavailable or busy \(pods\.logs\); retry shortly$/],
    [
      cloud(400, ApiCode.PodNotFound),
      404,
      /^the GPU cloud has no object for this resource any more \(pods\.logs\)$/,
    ],
    [
      new RequestValidationError('pods.logs', [{ path: 'query.startTime', message: CLOUD_WORDS }]),
      400,
      /^a value of the request is outside what pods\.logs accepts; nothing was sent$/,
    ],
    [
      new TransportError({
        operation: 'pods.logs',
        creates: false,
        reason: 'timeout',
        detail: CLOUD_WORDS,
        origin: 'https://cloud.example',
        attempts: 4,
        mayHaveTakenEffect: false,
      }),
      503,
      /^the GPU cloud did not answer pods\.logs in time; retry shortly$/,
    ],
    [
      new ResponseShapeError({ operation: 'pods.logs', httpStatus: 200, problem: CLOUD_WORDS, issues: [] }),
      502,
      /^the GPU cloud answered pods\.logs in a form the operator cannot read$/,
    ],
    [new Error(CLOUD_WORDS), 500, /^internal error in the operator; its log has the details$/],
  ];
  for (const [error, code, message] of cases) {
    const answered = asServingError(error, undefined);
    assert.equal(answered.code, code, answered.message);
    assert.match(answered.message, message);
    assert.doesNotMatch(answered.message, /query\.|lines per page|cloud\.example/);
  }
});

test('a request that ended is told apart: the client went (499), or its deadline passed (504)', () => {
  const error = cloud(500, 10002);
  assert.equal(asServingError(error, 'client-gone').code, 499);
  const late = asServingError(error, { deadlineMs: 1_500 });
  assert.equal(late.code, 504);
  assert.equal(late.message, 'the request did not complete within its timeout of 1.5s');
  const own = new ServingError(429, 'slow down');
  assert.equal(asServingError(own, 'client-gone'), own);
});
