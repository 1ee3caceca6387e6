import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { Counter, Registry } from 'prom-client';
import type { ClientOptions } from '../../src/api/call.ts';
import { GpuCloudClient } from '../../src/api/client.ts';
import type { FailureKind } from '../../src/api/codes.ts';
import { CloudApiError, RequestValidationError } from '../../src/api/errors.ts';
import { allOperations } from '../../src/api/operations.ts';
import { type RunningSimulator, startSimulator } from '../../src/sim/index.ts';
import { operationsOfSuite } from './suites.ts';

/*
 * The contract suite: the real client against the real simulator over loopback HTTP. Simulated time
 * only moves when a test says so (`env.step()`), so every state a test asserts is deterministic.
 */

/** One state-machine step of the simulator. Real time never reaches it during a test. */
export const STEP_MS = 60_000;
/** How long terminated pods and VMs stay visible. */
export const RETENTION_MS = 10 * STEP_MS;

const KEYS = {
  owner: 'contract-owner-key',
  /** Same organisation as the owner, without permission to terminate VMs. */
  restricted: 'contract-restricted-key',
  /** Another organisation. */
  stranger: 'contract-stranger-key',
} as const;

const clientDefaults = {
  // Contract tests make many quick calls: the client's limiter must not pace them.
  rateLimit: { requestsPerSecond: 10_000, burst: 10_000 },
  // The client's own retry policy, with short delays: what it retries stays visible in call counts.
  retry: { baseDelayMs: 1, maxDelayMs: 10 },
} satisfies Partial<ClientOptions>;

export interface RawAnswer {
  readonly status: number;
  readonly envelope: { code: number; message?: string; data?: unknown };
}

export class ContractEnv {
  #sim: RunningSimulator | undefined;
  readonly #clients: GpuCloudClient[] = [];
  /** Metrics of the owner's client: which operations succeeded at least once. */
  readonly metrics = new Registry();

  get sim(): RunningSimulator {
    assert.ok(this.#sim, 'the simulator is not started (use the env inside tests only)');
    return this.#sim;
  }

  /** The caller most tests act as. */
  get client(): GpuCloudClient {
    return this.#client(0);
  }

  /** Same organisation as `client`, but its key may not terminate VMs. */
  get restricted(): GpuCloudClient {
    return this.#client(1);
  }

  /** A caller of another organisation. */
  get stranger(): GpuCloudClient {
    return this.#client(2);
  }

  /** A client whose API key the service does not know; closed with the env. */
  clientWithKey(apiKey: string): GpuCloudClient {
    return this.#track(new GpuCloudClient({ ...clientDefaults, baseUrl: this.sim.url, apiKey }));
  }

  /**
   * Moves simulated time on by `steps` state-machine steps. One step at a time, so that a step
   * scheduled by another (DELIVERED, then SUCCESS) also runs.
   */
  step(steps = 1): void {
    for (let i = 0; i < steps; i++) this.sim.clock.advance(STEP_MS);
  }

  /** How many calls of one operation reached the simulator. */
  callsOf(operation: string): number {
    return this.sim.calls.snapshot().byOperation[operation] ?? 0;
  }

  /**
   * A request the typed client would refuse to send, to prove the service checks it too. Sends the
   * owner's key unless told otherwise (`apiKey: null` sends none).
   */
  async raw(method: string, path: string, options: { body?: unknown; apiKey?: string | null } = {}) {
    const { body, apiKey = KEYS.owner } = options;
    const headers: Record<string, string> = body === undefined ? {} : { 'content-type': 'application/json' };
    if (apiKey !== null) headers['x-api-key'] = apiKey;
    const response = await fetch(new URL(path, this.sim.url), {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: response.status, envelope: await response.json() } as RawAnswer;
  }

  async start(): Promise<void> {
    this.#sim = await startSimulator({
      apiKeys: [
        { key: KEYS.owner, org: 'acme' },
        { key: KEYS.restricted, org: 'acme', canTerminate: false },
        { key: KEYS.stranger, org: 'globex' },
      ],
      transitionMs: STEP_MS,
      retentionMs: RETENTION_MS,
    });
    const url = this.#sim.url;
    this.#track(
      new GpuCloudClient({ ...clientDefaults, baseUrl: url, apiKey: KEYS.owner, metrics: this.metrics }),
    );
    this.#track(new GpuCloudClient({ ...clientDefaults, baseUrl: url, apiKey: KEYS.restricted }));
    this.#track(new GpuCloudClient({ ...clientDefaults, baseUrl: url, apiKey: KEYS.stranger }));
  }

  async stop(): Promise<void> {
    await Promise.allSettled(this.#clients.map((client) => client.close()));
    await this.#sim?.stop();
  }

  /** Operation names the owner's client called with success. */
  async succeeded(): Promise<Set<string>> {
    const metric = this.metrics.getSingleMetric('gpucloud_api_requests_total');
    assert.ok(metric instanceof Counter, 'the client registers gpucloud_api_requests_total');
    const { values } = await metric.get();
    return new Set(
      values
        .filter((value) => value.labels.code === '10000' && value.value > 0)
        .map((v) => String(v.labels.operation)),
    );
  }

  #client(index: number): GpuCloudClient {
    const client = this.#clients[index];
    assert.ok(client, 'the simulator is not started (use the env inside tests only)');
    return client;
  }

  #track(client: GpuCloudClient): GpuCloudClient {
    this.#clients.push(client);
    return client;
  }
}

/** Starts a simulator and clients before the file's tests, and stops them after, even on failure. */
export function useContract(): ContractEnv {
  const env = new ContractEnv();
  before(() => env.start());
  after(() => env.stop());
  return env;
}

/**
 * The last test of a suite file: every operation the suite claims (see suites.ts) succeeded at least
 * once through the typed client.
 */
export function itExercisedEveryOperation(env: ContractEnv, suite: string): void {
  it(`exercised every operation of suite ${suite} with success`, async () => {
    const claimed = operationsOfSuite(suite, allOperations);
    assert.ok(claimed.length > 0, `suite ${suite} claims no operation`);
    const succeeded = await env.succeeded();
    assert.deepEqual(
      claimed.filter((name) => !succeeded.has(name)),
      [],
      'operations never called with success',
    );
  });
}

export interface ExpectedFailure {
  readonly code: number;
  readonly httpStatus?: number;
  readonly kind?: FailureKind;
  /** Matched against the service's message. */
  readonly message?: RegExp;
}

/** The call fails with the service's answer: code, and optionally HTTP status, kind and message. */
export async function rejectsWithCode(
  call: Promise<unknown>,
  expected: ExpectedFailure,
): Promise<CloudApiError> {
  let caught: unknown;
  await assert.rejects(call, (error: unknown) => {
    caught = error;
    return true;
  });
  assert.ok(caught instanceof CloudApiError, `expected a CloudApiError, got ${String(caught)}`);
  assert.equal(caught.code, expected.code, caught.message);
  if (expected.httpStatus !== undefined) assert.equal(caught.httpStatus, expected.httpStatus, caught.message);
  if (expected.kind !== undefined) assert.equal(caught.kind, expected.kind, caught.message);
  if (expected.message !== undefined) assert.match(caught.serviceMessage, expected.message);
  return caught;
}

/** The client refuses the input before sending anything; one issue names `path` and matches `message`. */
export async function rejectsLocally(call: Promise<unknown>, path: string, message: RegExp): Promise<void> {
  await assert.rejects(call, (error: unknown) => {
    assert.ok(
      error instanceof RequestValidationError,
      `expected a RequestValidationError, got ${String(error)}`,
    );
    assert.ok(
      error.issues.some((issue) => issue.path === path && message.test(issue.message)),
      `no issue at ${path} matching ${message}: ${error.message}`,
    );
    return true;
  });
}

/** A cloud id nothing has: ids are decimal strings. */
export const MISSING_ID = '999999999';

/** Every item of an async iterable, in order. */
export async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const all: T[] = [];
  for await (const item of items) all.push(item);
  return all;
}
