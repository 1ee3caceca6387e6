import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { type Logger, pino } from 'pino';
import { Registry } from 'prom-client';
import { type ClientMetrics, createClientMetrics } from './client-metrics.ts';
import { type ClientOptions, resolveClientOptions } from './client-options.ts';
import { encodeRequest } from './encode-request.ts';
import { GpuCloudError, TransportError } from './errors.ts';
import type { Operation, OperationInput, OperationResult } from './operation.ts';
import { failureError, mayHaveTakenEffect, type Outcome, outcomeLabel } from './outcome.ts';
import { readResponse } from './read-response.ts';
import { RequestLimiter } from './request-limiter.ts';
import { planRetry, type RetryPlan } from './retry.ts';
import { Transport, type WireRequest } from './transport.ts';

export type { ClientOptions } from './client-options.ts';

export type Invoke = <O extends Operation>(op: O, input: OperationInput<O>) => Promise<OperationResult<O>>;

/**
 * Makes the function every typed client call goes through: validate and encode the input, wait for
 * a rate-limiter token, send, read the envelope, retry what is safe to retry, and record metrics and
 * a debug line per attempt. Errors are `GpuCloudError`s; see `errors.ts`.
 */
export function createInvoker(options: ClientOptions): {
  invoke: Invoke;
  /** Whether the service's last answer refused the key (HTTP 401); a later accepted call clears it. */
  keyRejected(): boolean;
  close(): Promise<void>;
} {
  const config = resolveClientOptions(options);
  const keys = keySource(config.apiKey);
  const transport = new Transport({
    baseUrl: new URL(config.baseUrl),
    apiKey: () => keys.current(),
    connections: config.connections,
    connectTimeoutMs: config.connectTimeoutMs,
    requestTimeoutMs: config.requestTimeoutMs,
  });
  const limiter = new RequestLimiter(config.rateLimit);
  const metrics = createClientMetrics(config.metrics ?? new Registry(), config.account);
  const log = (config.logger ?? pino({ enabled: false })).child({ component: 'gpucloud-api' });
  const closing = new AbortController();
  const redact = (text: string) => keys.redact(text);
  const attempt = attemptSender({ transport, limiter, metrics, closing: closing.signal, redact });
  let rejected = false;

  async function invoke<O extends Operation>(op: O, input: OperationInput<O>): Promise<OperationResult<O>> {
    const request = encodeRequest(op, input);
    let attempts = 0;
    let tookEffect = false;
    let refreshed = false;
    try {
      for (;;) {
        const sentWith = keys.current();
        const { outcome, seconds } = await attempt(op, request);
        attempts += 1;
        if (outcome.kind !== 'network') rejected = outcome.kind === 'api' && outcome.httpStatus === 401;
        if (outcome.kind === 'success') {
          logAttempt(log, op, attempts, outcome, seconds, undefined);
          return outcome.value;
        }
        tookEffect ||= mayHaveTakenEffect(outcome);
        // A rejected key may have been rotated: read it anew, once, and retry if it changed. A 401
        // took no effect, so even a create is safe to send again.
        if (outcome.kind === 'api' && outcome.httpStatus === 401 && !refreshed) {
          refreshed = true;
          if ((await keys.refresh()) !== sentWith) {
            metrics.retry(op.name, 'key_rotated');
            continue;
          }
        }
        const plan = planRetry(op, outcome, attempts - 1, config.retry);
        logAttempt(log, op, attempts, outcome, seconds, plan);
        if (plan === undefined) {
          const context = { op, origin: transport.origin, attempts, mayHaveTakenEffect: tookEffect };
          throw failureError(outcome, context);
        }
        metrics.retry(op.name, plan.reason);
        await sleep(plan.delayMs, undefined, { signal: closing.signal });
      }
    } catch (error) {
      if (error instanceof GpuCloudError || !closing.signal.aborted) throw error;
      throw closedError(op, transport.origin, attempts, tookEffect, error);
    }
  }

  let closed: Promise<void> | undefined;
  return {
    invoke,
    keyRejected: () => rejected,
    close() {
      closing.abort(new Error('the GPU cloud client was closed'));
      closed ??= transport.close();
      return closed;
    },
  };
}

interface Keys {
  current(): string;
  refresh(): Promise<string>;
  /** Cuts every key this client has sent from a text the service answered. */
  redact(text: string): string;
}

function keySource(key: ClientOptions['apiKey']): Keys {
  const source = typeof key === 'string' ? { current: () => key, refresh: async () => key } : key;
  // Every key sent so far: a slow answer may echo the one before a rotation.
  const sent = new Set<string>();
  return {
    current: () => {
      const current = source.current();
      sent.add(current);
      return current;
    },
    refresh: () => source.refresh(),
    redact: (text) => [...sent].reduce((out, secret) => out.replaceAll(secret, '[redacted]'), text),
  };
}

interface AttemptDeps {
  transport: Transport;
  limiter: RequestLimiter;
  metrics: ClientMetrics;
  closing: AbortSignal;
  redact: (text: string) => string;
}

/** One HTTP attempt, rate limited (retries take tokens too) and measured. Rejects only when the client closes. */
function attemptSender(deps: AttemptDeps) {
  return async <O extends Operation>(op: O, request: WireRequest) => {
    const waitedMs = await deps.limiter.acquire(deps.closing);
    deps.metrics.rateLimiterWait(op.name, waitedMs / 1000);
    const started = performance.now();
    const answer = await deps.transport.send(request);
    const outcome: Outcome<OperationResult<O>> =
      answer.kind === 'response' ? readResponse(op, answer, deps.redact) : answer;
    const seconds = (performance.now() - started) / 1000;
    deps.metrics.attempt(op.name, outcomeLabel(outcome), seconds);
    return { outcome, seconds };
  };
}

/** Operation, status, code and timing only: bodies and headers (the key) never reach the log. */
function logAttempt(
  log: Logger,
  op: Operation,
  attempt: number,
  outcome: Outcome,
  seconds: number,
  retry: RetryPlan | undefined,
): void {
  const fields = {
    operation: op.name,
    attempt,
    httpStatus: outcome.kind === 'network' ? undefined : outcome.httpStatus,
    code: outcomeLabel(outcome),
    durationMs: Math.round(seconds * 1000),
    retryReason: retry?.reason,
    retryInMs: retry?.delayMs,
  };
  log.debug(fields, attemptMessage(outcome, retry));
}

function attemptMessage(outcome: Outcome, retry: RetryPlan | undefined): string {
  if (outcome.kind === 'success') return 'gpu cloud call succeeded';
  return retry === undefined ? 'gpu cloud call failed' : 'gpu cloud call attempt failed, retrying';
}

function closedError(
  op: Operation,
  origin: string,
  attempts: number,
  mayHaveTakenEffect: boolean,
  cause: unknown,
): TransportError {
  return new TransportError({
    operation: op.name,
    creates: op.creates,
    reason: 'closed',
    detail: 'the client was closed before the call completed',
    origin,
    attempts,
    mayHaveTakenEffect,
    cause,
  });
}
