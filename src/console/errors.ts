import { CloudApiError, GpuCloudError, RequestValidationError } from '../api/errors.ts';

/** Exit codes a script can rely on. */
export const EXIT = {
  ok: 0,
  /** The cloud refused or failed the call; its code is in the message. */
  cloud: 1,
  /** The command line was wrong; for `plan`, also a manifest admission would refuse. */
  usage: 2,
  /** The resource, the cloud object or its id does not exist (yet), or the pod has no metric samples yet. */
  notFound: 3,
  /** No key, or the cloud refused the key. */
  credentials: 4,
  /** A watched task ended FAILED. */
  taskFailed: 5,
  /**
   * `plan`: a resource would not be created now: no offer or VM type matches it, or a guardrail or budget of
   * its account would refuse it.
   */
  refused: 6,
} as const;

/** A failure with what to do about it, and the exit code that says which kind it is. */
export class CommandError extends Error {
  readonly exitCode: number;
  constructor(message: string, exitCode: number) {
    super(message);
    this.name = 'CommandError';
    this.exitCode = exitCode;
  }
}

export const usageError = (message: string) => new CommandError(message, EXIT.usage);

/** Any error as the line a user reads, and its exit code. Never prints a key: errors carry none. */
export function explain(error: unknown): { message: string; exitCode: number } {
  if (error instanceof CommandError) return { message: error.message, exitCode: error.exitCode };
  if (error instanceof CloudApiError) {
    if (error.httpStatus === 401) {
      return {
        message: 'the cloud refused the API key (HTTP 401): check --api-key or GPUCLOUD_API_KEY',
        exitCode: EXIT.credentials,
      };
    }
    const code = error.code === null ? `HTTP ${error.httpStatus}` : `code ${error.code}`;
    const exitCode = error.kind === 'notFound' ? EXIT.notFound : EXIT.cloud;
    return { message: `the cloud refused the call (${code}): ${error.serviceMessage}`, exitCode };
  }
  if (error instanceof RequestValidationError) return { message: error.message, exitCode: EXIT.usage };
  if (error instanceof GpuCloudError) return { message: error.message, exitCode: EXIT.cloud };
  return { message: error instanceof Error ? error.message : String(error), exitCode: EXIT.cloud };
}
