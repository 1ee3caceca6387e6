import type { z } from 'zod';
import { type ApiCodeName, apiCodeName, type FailureKind, failureKind } from './codes.ts';

/** One problem found by a schema, e.g. `{ path: 'body.gpuCount', message: 'Too small: ...' }`. */
export interface FieldIssue {
  readonly path: string;
  readonly message: string;
}

/**
 * Base of every error the API client throws. The flags let a caller decide without knowing the
 * subclasses: retry later, give up until the input changes, or look before repeating a create.
 */
export abstract class GpuCloudError extends Error {
  /** The operation's stable name, e.g. `pods.create`. */
  readonly operation: string;
  /** A later attempt of the same request may succeed. */
  abstract readonly retryable: boolean;
  /** It will keep failing until the request, or the API key's permissions, change. */
  abstract readonly terminal: boolean;
  /**
   * False only when the service provably did not act on the request: it never reached the service,
   * or the service refused or rate-limited it. When true after a create, look the resource up
   * before creating it again.
   */
  abstract readonly mayHaveTakenEffect: boolean;

  constructor(operation: string, message: string, options?: ErrorOptions) {
    super(`${operation}: ${message}`, options);
    this.operation = operation;
  }
}

const lookBeforeCreating = ' It may have been created: look the resource up before creating it again.';

function createHint(creates: boolean, mayHaveTakenEffect: boolean): string {
  return creates && mayHaveTakenEffect ? lookBeforeCreating : '';
}

export interface CloudApiErrorDetails {
  operation: string;
  creates: boolean;
  httpStatus: number;
  /** The envelope's code, or null when the service answered without an envelope. */
  code: number | null;
  /** The envelope's message, already stripped of secrets. */
  serviceMessage: string;
  attempts: number;
  retryAfterMs?: number | undefined;
}

const advice: Readonly<Record<FailureKind, string>> = {
  transient: 'This is transient: retry later.',
  terminal: 'Retrying will not help until the request or the API key changes.',
  notFound: "The resource does not exist or is not visible to this API key's organisation.",
  conflict: 'The resource is not in a state that allows this; re-read it and retry when it changes.',
  unknown: 'This client does not know the code.',
};

/** The service answered, and the answer is a failure (by envelope code, or by HTTP status without one). */
export class CloudApiError extends GpuCloudError {
  override readonly name = 'CloudApiError';
  readonly code: number | null;
  readonly codeName: ApiCodeName | undefined;
  readonly serviceMessage: string;
  readonly httpStatus: number;
  readonly kind: FailureKind;
  readonly attempts: number;
  /** The service's `Retry-After` when it rate-limited the call for longer than this client waits. */
  readonly retryAfterMs: number | undefined;
  readonly retryable: boolean;
  readonly terminal: boolean;
  readonly mayHaveTakenEffect: boolean;

  constructor(details: CloudApiErrorDetails) {
    const kind = failureKind(details.code, details.httpStatus);
    const codeName = details.code === null ? undefined : apiCodeName(details.code);
    const mayHaveTakenEffect = details.httpStatus >= 500;
    const codeText =
      details.code === null ? 'no result code' : `code ${details.code}${codeName ? ` (${codeName})` : ''}`;
    const quoted = details.serviceMessage ? ` "${details.serviceMessage}"` : '';
    const wait =
      details.retryAfterMs === undefined ? '' : ` The service asked to wait ${details.retryAfterMs} ms.`;
    super(
      details.operation,
      `the service answered HTTP ${details.httpStatus} with ${codeText}${quoted} after ${attemptsText(details.attempts)}. ` +
        `${details.httpStatus === 401 ? 'Check the API key. ' : ''}${advice[kind]}${wait}` +
        createHint(details.creates, mayHaveTakenEffect),
    );
    this.code = details.code;
    this.codeName = codeName;
    this.serviceMessage = details.serviceMessage;
    this.httpStatus = details.httpStatus;
    this.kind = kind;
    this.attempts = details.attempts;
    this.retryAfterMs = details.retryAfterMs;
    this.retryable = kind === 'transient';
    this.terminal = kind === 'terminal';
    this.mayHaveTakenEffect = mayHaveTakenEffect;
  }
}

export interface TransportErrorDetails {
  operation: string;
  creates: boolean;
  /** `closed` when the client was closed while the call waited for a retry or a rate-limiter token. */
  reason: 'network' | 'timeout' | 'closed';
  /** What went wrong, e.g. `ECONNREFUSED connect ECONNREFUSED 127.0.0.1:8080`. Never carries the key. */
  detail: string;
  /** The service's origin, so a wrong base URL is obvious. */
  origin: string;
  attempts: number;
  /** False only when no attempt reached the service, or the service refused every one that did. */
  mayHaveTakenEffect: boolean;
  cause?: unknown;
}

/** No usable answer: connection failed or dropped, the service did not answer in time, or the client closed. */
export class TransportError extends GpuCloudError {
  override readonly name = 'TransportError';
  readonly reason: TransportErrorDetails['reason'];
  readonly detail: string;
  readonly attempts: number;
  readonly retryable: boolean;
  readonly terminal = false;
  readonly mayHaveTakenEffect: boolean;

  constructor(details: TransportErrorDetails) {
    const reached = details.mayHaveTakenEffect
      ? 'the request may have reached the service'
      : 'the service did not act on the request';
    super(
      details.operation,
      `${details.reason === 'timeout' ? 'no timely answer' : 'no answer'} from ${details.origin} ` +
        `after ${attemptsText(details.attempts)} (${details.detail}); ${reached}.` +
        createHint(details.creates, details.mayHaveTakenEffect),
      { cause: details.cause },
    );
    this.reason = details.reason;
    this.detail = details.detail;
    this.attempts = details.attempts;
    this.retryable = details.reason !== 'closed';
    this.mayHaveTakenEffect = details.mayHaveTakenEffect;
  }
}

/** The input failed the operation's schema; nothing was sent. */
export class RequestValidationError extends GpuCloudError {
  override readonly name = 'RequestValidationError';
  readonly issues: readonly FieldIssue[];
  readonly retryable = false;
  readonly terminal = true;
  readonly mayHaveTakenEffect = false;

  constructor(operation: string, issues: readonly FieldIssue[]) {
    super(operation, `invalid request, nothing was sent: ${issuesText(issues)}`);
    this.issues = issues;
  }
}

export interface ResponseShapeErrorDetails {
  operation: string;
  httpStatus: number;
  /** What does not fit, e.g. `the body is not JSON`. */
  problem: string;
  issues: readonly FieldIssue[];
}

/**
 * The service answered something this client cannot read: not JSON, not an envelope, or data that
 * does not match the operation's schema. Usually a client/service version mismatch.
 */
export class ResponseShapeError extends GpuCloudError {
  override readonly name = 'ResponseShapeError';
  readonly httpStatus: number;
  readonly issues: readonly FieldIssue[];
  readonly retryable = false;
  readonly terminal = false;
  readonly mayHaveTakenEffect = true;

  constructor(details: ResponseShapeErrorDetails) {
    const listed = details.issues.length > 0 ? `: ${issuesText(details.issues)}` : '';
    super(
      details.operation,
      `unexpected answer (HTTP ${details.httpStatus}): ${details.problem}${listed}. ` +
        'The service and this client may disagree on the API version.',
    );
    this.httpStatus = details.httpStatus;
    this.issues = details.issues;
  }
}

/** Flattens a zod error into field issues whose paths start at `root` (e.g. `body`, `data`). */
export function fieldIssues(error: z.ZodError, root: string): FieldIssue[] {
  return error.issues.map((issue) => ({ path: formatPath(root, issue.path), message: issue.message }));
}

function formatPath(root: string, path: readonly PropertyKey[]): string {
  return path.reduce<string>(
    (text, key) => (typeof key === 'number' ? `${text}[${key}]` : `${text}.${String(key)}`),
    root,
  );
}

function issuesText(issues: readonly FieldIssue[]): string {
  return issues.map((issue) => `${issue.path}: ${issue.message}`).join('; ');
}

function attemptsText(attempts: number): string {
  return attempts === 1 ? '1 attempt' : `${attempts} attempts`;
}
