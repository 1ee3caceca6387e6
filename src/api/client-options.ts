import type { Logger } from 'pino';
import { Registry } from 'prom-client';
import { z } from 'zod';

const milliseconds = z.number().int().min(0);

/**
 * Where the key comes from when it can change while the client lives (a rotated Secret). `refresh`
 * reads it anew; the client calls it when the service answers 401, and retries once with a new key.
 */
export interface ApiKeySource {
  current(): string;
  refresh(): Promise<string>;
}

function isKeySource(value: unknown): value is ApiKeySource {
  return typeof value === 'object' && value !== null && 'current' in value && 'refresh' in value;
}

function isLogger(value: unknown): value is Logger {
  return typeof value === 'object' && value !== null && 'child' in value && typeof value.child === 'function';
}

export const clientOptionsSchema = z.object({
  /** Where the service lives, e.g. `https://api.example.com` (a path prefix is kept). */
  baseUrl: z.url({ protocol: /^https?$/ }),
  /** Sent as `x-api-key`; never logged, never part of an error or a metric. */
  apiKey: z.union([z.string().min(1), z.custom<ApiKeySource>(isKeySource, 'expected a key or a key source')]),
  /** Names the cloud account in metrics (`account` label), so clients of several accounts share a registry. */
  account: z.string().min(1).default('default'),
  /**
   * Longest wait for the answer's headers once a request is sent, and longest silence within its
   * body. Undici checks it on a coarse clock (about twice a second), so it may fire up to ~1 s late.
   */
  requestTimeoutMs: milliseconds.positive().default(30_000),
  connectTimeoutMs: milliseconds.positive().default(10_000),
  /** Most sockets kept open (and reused) to the service. */
  connections: z.number().int().positive().default(10),
  retry: z
    .object({
      maxRetries: z.number().int().min(0).default(3),
      baseDelayMs: milliseconds.default(200),
      maxDelayMs: milliseconds.default(5_000),
      maxRetryAfterMs: milliseconds.default(30_000),
    })
    .prefault({}),
  /** Shared by every call of the client, retries included. */
  rateLimit: z
    .object({
      requestsPerSecond: z.number().positive().default(10),
      burst: z.number().int().min(1).default(20),
    })
    .prefault({}),
  /** Receives one debug line per HTTP attempt. Default: no logging. */
  logger: z.custom<Logger>(isLogger, 'expected a pino Logger').optional(),
  /** Where the client's metrics go. Default: a registry of its own, never prom-client's global one. */
  metrics: z
    .custom<Registry>((value) => value instanceof Registry, 'expected a prom-client Registry')
    .optional(),
});

export type ClientOptions = z.input<typeof clientOptionsSchema>;
export type ResolvedClientOptions = z.output<typeof clientOptionsSchema>;

/** Applies defaults; throws a `TypeError` naming every bad option (values are not echoed: one is the key). */
export function resolveClientOptions(options: ClientOptions): ResolvedClientOptions {
  const result = clientOptionsSchema.safeParse(options);
  if (result.success) return result.data;
  throw new TypeError(`Invalid GPU cloud client options:\n${z.prettifyError(result.error)}`);
}
