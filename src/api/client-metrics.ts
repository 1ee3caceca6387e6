import { Counter, Histogram, type Registry } from 'prom-client';
import type { RetryReason } from './retry.ts';

/** What the client records; labels are operation names, codes and reasons only, never request content. */
export interface ClientMetrics {
  /** One HTTP attempt; `code` is the envelope code, `http_<status>`, `network` or `timeout`. */
  attempt(operation: string, code: string, seconds: number): void;
  retry(operation: string, reason: RetryReason): void;
  /** Time one attempt waited for a rate-limiter token (0 when one was free). */
  rateLimiterWait(operation: string, seconds: number): void;
}

/**
 * Registers the client's metrics on `registry`, or reuses them when another client already did, so
 * several clients (one per cloud account) may share one registry; `account` tells their series apart.
 */
export function createClientMetrics(registry: Registry, account: string): ClientMetrics {
  const requests = counter(registry, {
    name: 'gpucloud_api_requests_total',
    help: 'HTTP requests sent to the GPU cloud API, by operation and result code',
    labelNames: ['operation', 'code', 'account'],
  });
  const duration = histogram(registry, {
    name: 'gpucloud_api_request_duration_seconds',
    help: 'Duration of one HTTP request to the GPU cloud API, until its body is read',
    labelNames: ['operation', 'account'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
  });
  const retries = counter(registry, {
    name: 'gpucloud_api_retries_total',
    help: 'Requests to the GPU cloud API repeated after a failed attempt, by reason',
    labelNames: ['operation', 'reason', 'account'],
  });
  const waits = histogram(registry, {
    name: 'gpucloud_api_rate_limiter_wait_seconds',
    help: 'Time a request waited for the client-side rate limiter before it was sent',
    labelNames: ['operation', 'account'],
    buckets: [0, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
  });
  return {
    attempt(operation, code, seconds) {
      requests.inc({ operation, code, account });
      duration.observe({ operation, account }, seconds);
    },
    retry(operation, reason) {
      retries.inc({ operation, reason, account });
    },
    rateLimiterWait(operation, seconds) {
      waits.observe({ operation, account }, seconds);
    },
  };
}

interface MetricConfig {
  name: string;
  help: string;
  labelNames: string[];
}

function counter(registry: Registry, config: MetricConfig): Counter {
  const existing = registry.getSingleMetric(config.name);
  return existing instanceof Counter ? existing : new Counter({ ...config, registers: [registry] });
}

function histogram(registry: Registry, config: MetricConfig & { buckets: number[] }): Histogram {
  const existing = registry.getSingleMetric(config.name);
  return existing instanceof Histogram ? existing : new Histogram({ ...config, registers: [registry] });
}
