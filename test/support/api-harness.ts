import type { TestContext } from 'node:test';
import { Registry } from 'prom-client';
import { type ClientOptions, createInvoker } from '../../src/api/call.ts';
import { type MisbehavingServer, startMisbehavingServer } from './misbehaving-server.ts';

export const testApiKey = 'gck_live_5ecr3t-TEST-KEY-0042';

export interface Harness {
  readonly server: MisbehavingServer;
  readonly registry: Registry;
  readonly client: ReturnType<typeof createInvoker>;
}

/**
 * A misbehaving server and a client pointed at it, with fast retries and a rate limit that does not
 * get in the way unless a test sets one. Both are torn down when the test ends, pass or fail.
 */
export async function startHarness(t: TestContext, options: Partial<ClientOptions> = {}): Promise<Harness> {
  const server = await startMisbehavingServer();
  const registry = new Registry();
  const client = createInvoker({
    baseUrl: server.url,
    apiKey: testApiKey,
    retry: { maxRetries: 3, baseDelayMs: 1, maxDelayMs: 5 },
    rateLimit: { requestsPerSecond: 10_000, burst: 10_000 },
    metrics: registry,
    ...options,
  });
  t.after(async () => {
    await server.close();
    await client.close();
  });
  return { server, registry, client };
}

/** The value of one sample of a metric; for a histogram, pass `${name}_count` as `sample`. */
export async function metricValue(
  registry: Registry,
  name: string,
  labels: Record<string, string>,
  sample: string = name,
): Promise<number> {
  const metric = registry.getSingleMetric(name);
  if (metric === undefined) return 0;
  const { values } = await metric.get();
  const match = values.find(
    (value) =>
      sampleName(value, name) === sample &&
      Object.entries(labels).every(([key, expected]) => value.labels[key] === expected),
  );
  return match?.value ?? 0;
}

/** Histograms name each sample (`_bucket`, `_sum`, `_count`); counters do not. */
function sampleName(value: object, metric: string): string {
  return 'metricName' in value && typeof value.metricName === 'string' ? value.metricName : metric;
}
