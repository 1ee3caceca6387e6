import { z } from 'zod';
import { CloudApiError, GpuCloudError } from '../../api/errors.ts';
import { KubeApiError } from '../../kube/client.ts';

/**
 * A failure as the user sees it on the custom resource: a stable CamelCase `reason` for the Synced
 * condition and events, a message that says what to do, and whether retrying can help before the spec
 * (or the API key) changes. Reasons never carry ids, times or counts, so a repeated failure is not a
 * changed status.
 */
export class ReconcileError extends Error {
  override readonly name = 'ReconcileError';
  readonly reason: string;
  readonly terminal: boolean;
  /**
   * A wait that no retry shortens (a limit of the account, room freed elsewhere): looked at again after
   * this, steadily, instead of with the work queue's growing backoff.
   */
  readonly retryAfterMs: number | undefined;

  constructor(
    reason: string,
    message: string,
    options: { terminal: boolean; cause?: unknown; retryAfterMs?: number | undefined },
  ) {
    super(message, { cause: options.cause });
    this.reason = reason;
    this.terminal = options.terminal;
    this.retryAfterMs = options.retryAfterMs;
  }
}

export function toReconcileError(error: unknown): ReconcileError {
  if (error instanceof ReconcileError) return error;
  if (error instanceof CloudApiError) return fromCloud(error);
  if (error instanceof GpuCloudError) {
    const reason = error.terminal ? 'CloudRequestInvalid' : 'CloudUnavailable';
    return new ReconcileError(reason, error.message, { terminal: error.terminal, cause: error });
  }
  if (error instanceof z.ZodError) {
    return new ReconcileError('InvalidSpec', `the spec does not fit the schema: ${z.prettifyError(error)}`, {
      terminal: true,
      cause: error,
    });
  }
  if (error instanceof KubeApiError) {
    return new ReconcileError('KubernetesApiError', error.message, { terminal: false, cause: error });
  }
  const message = error instanceof Error ? error.message : String(error);
  return new ReconcileError('InternalError', message, { terminal: false, cause: error });
}

/**
 * The failure with every Secret value in `secrets` cut from its message. The cause goes: it holds the
 * cloud's raw text, which echoed the value. Applies to Secret values as the API client does to its key.
 */
export function withoutSecrets(failure: ReconcileError, secrets: ReadonlySet<string>): ReconcileError {
  const shown = [...secrets].filter((secret) => secret !== '' && failure.message.includes(secret));
  if (shown.length === 0) return failure;
  const message = shown.reduce((text, secret) => text.replaceAll(secret, '[redacted]'), failure.message);
  return new ReconcileError(failure.reason, message, { terminal: failure.terminal });
}

function fromCloud(error: CloudApiError): ReconcileError {
  // A refused key is the account's trouble, not the resource's: retried with backoff until the key is
  // fixed (the operator is unready meanwhile), never left as a terminal failure.
  if (error.httpStatus === 401) {
    return new ReconcileError('CloudKeyRejected', error.message, { terminal: false, cause: error });
  }
  const reason = error.codeName === 'NoTerminatePermission' ? 'PermissionDenied' : cloudReasons[error.kind];
  return new ReconcileError(reason, error.message, { terminal: error.terminal, cause: error });
}

const cloudReasons: Readonly<Record<CloudApiError['kind'], string>> = {
  transient: 'CloudUnavailable',
  terminal: 'CloudRejected',
  notFound: 'CloudNotFound',
  conflict: 'CloudStateConflict',
  unknown: 'CloudError',
};

/**
 * The turn's copy of the resource predates a write this process made (the informer has not delivered it
 * yet): nothing decided from it may stand, so the turn ends and reads again, as after a 409.
 */
export class StaleCopyError extends Error {
  override readonly name = 'StaleCopyError';
}

/**
 * An optimistic-concurrency conflict, or a copy known to be stale: look again, rate limited; it is not a
 * failure, and the key's backoff keeps growing rather than starting over.
 */
export function isConflict(error: unknown): boolean {
  return (error instanceof KubeApiError && error.status === 409) || error instanceof StaleCopyError;
}

/** The object is gone from the apiserver (deleted, its finalizer released). */
export function isNotFound(error: unknown): boolean {
  return error instanceof KubeApiError && error.status === 404;
}
