import { type Envelope, envelopeSchema, isSuccess } from './envelope.ts';
import { type FieldIssue, fieldIssues } from './errors.ts';
import type { Operation, OperationResult } from './operation.ts';
import type { ApiFailure, ShapeFailure, Success } from './outcome.ts';
import { parseRetryAfterMs } from './retry.ts';
import type { HttpResponse } from './transport.ts';

/** Service messages end up in errors, logs and CR conditions; a runaway one must not flood them. */
const maxServiceMessageLength = 500;

type EnvelopeRead = { ok: true; envelope: Envelope } | { ok: false; problem: string; issues: FieldIssue[] };

/**
 * Interprets one HTTP answer. The envelope's code decides success, whatever the HTTP status:
 * business errors arrive with 200, validation errors with 400. Only an answer without an envelope
 * falls back on the HTTP status (401 for a bad key, a proxy's 502).
 *
 * `redact` strips secrets from the service's message, in case the service echoes what it was sent.
 */
export function readResponse<O extends Operation>(
  op: O,
  response: HttpResponse,
  redact: (text: string) => string,
): Success<OperationResult<O>> | ApiFailure | ShapeFailure {
  const httpStatus = response.status;
  const read = readEnvelope(response.body);
  if (!read.ok) {
    if (httpStatus >= 200 && httpStatus < 300) return { kind: 'shape', httpStatus, code: null, ...read };
    return apiFailure(response, null, '');
  }
  const { envelope } = read;
  if (!isSuccess(envelope)) return apiFailure(response, envelope.code, redact(envelope.message ?? ''));
  const data = op.data.safeParse(envelope.data);
  if (!data.success) {
    const issues = fieldIssues(data.error, 'data');
    return {
      kind: 'shape',
      httpStatus,
      code: envelope.code,
      problem: 'the data does not match the schema',
      issues,
    };
  }
  // `safeParse` on a generic schema is typed by its constraint (ZodType, output unknown); the value
  // is nonetheless the output of `op.data`, which is what OperationResult<O> names.
  return { kind: 'success', httpStatus, value: data.data as OperationResult<O> };
}

function readEnvelope(body: string): EnvelopeRead {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    return { ok: false, problem: `the body is not JSON (${body.length} characters)`, issues: [] };
  }
  const envelope = envelopeSchema.safeParse(json);
  if (envelope.success) return { ok: true, envelope: envelope.data };
  return {
    ok: false,
    problem: 'the body is not a {code, message, data} envelope',
    issues: fieldIssues(envelope.error, 'body'),
  };
}

function apiFailure(response: HttpResponse, code: number | null, message: string): ApiFailure {
  return {
    kind: 'api',
    httpStatus: response.status,
    code,
    serviceMessage:
      message.length > maxServiceMessageLength ? `${message.slice(0, maxServiceMessageLength)}…` : message,
    retryAfterMs: parseRetryAfterMs(response.retryAfter),
  };
}
