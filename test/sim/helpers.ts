import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, type TestContext } from 'node:test';
import { type RunningSimulator, type SimulatorOptions, startSimulator } from '../../src/sim/index.ts';

/** One state-machine step in these tests. Simulated time stands still unless a test advances it. */
export const STEP = 60_000;

export const KEY = 'sim-test-key';
export const OTHER_KEY = 'sim-test-other-org-key';

export interface Answer {
  readonly status: number;
  readonly headers: Headers;
  /** The parsed JSON body (the service envelope for API calls). */
  readonly body: { code: number; message: string; data: unknown } & Record<string, unknown>;
}

export interface CallOptions {
  readonly key?: string | null;
  readonly body?: unknown;
  /** Sent as is, instead of `body` as JSON. */
  readonly rawBody?: string | Uint8Array;
  readonly headers?: Record<string, string>;
}

/** A simulator for one test file, stopped after the file's tests even when they fail. */
export function useSimulator(options: Partial<SimulatorOptions> = {}): Sim {
  const sim = new Sim(options);
  after(() => sim.stop());
  return sim;
}

export class Sim {
  readonly #options: Partial<SimulatorOptions>;
  #running: Promise<RunningSimulator> | undefined;

  constructor(options: Partial<SimulatorOptions>) {
    this.#options = options;
  }

  /** Started on first use. */
  running(): Promise<RunningSimulator> {
    this.#running ??= startSimulator({
      apiKeys: [KEY, OTHER_KEY],
      transitionMs: STEP,
      manualTime: true,
      ...this.#options,
    });
    return this.#running;
  }

  async stop(): Promise<void> {
    await (await this.#running)?.stop();
  }

  /** An HTTP call with the test key (or `key`), answering status, headers and parsed body. */
  async call(method: string, path: string, options: CallOptions = {}): Promise<Answer> {
    const { url } = await this.running();
    const { key = KEY, body, rawBody, headers = {} } = options;
    const response = await fetch(`${url}${path}`, {
      method,
      headers: {
        ...(key === null ? {} : { 'x-api-key': key }),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...headers,
      },
      body: rawBody ?? (body === undefined ? undefined : JSON.stringify(body)),
    });
    return {
      status: response.status,
      headers: response.headers,
      body: (await response.json()) as Answer['body'],
    };
  }

  /** A call that must succeed; answers the envelope's data. */
  async ok<T = Record<string, unknown>>(method: string, path: string, options: CallOptions = {}): Promise<T> {
    const answer = await this.call(method, path, options);
    assert.equal(answer.body.code, 10000, `${method} ${path}: ${answer.body.message}`);
    assert.equal(answer.status, 200);
    return answer.body.data as T;
  }

  /** A call that must fail with `code`; answers the whole answer for further checks. */
  async fails(code: number, method: string, path: string, options: CallOptions = {}): Promise<Answer> {
    const answer = await this.call(method, path, options);
    assert.equal(
      answer.body.code,
      code,
      `${method} ${path}: expected code ${code}, got: ${JSON.stringify(answer.body)}`,
    );
    assert.equal(answer.body.data, null);
    return answer;
  }

  async advance(ms = STEP): Promise<void> {
    (await this.running()).clock.advance(ms);
  }

  /** A call to the admin surface (plain JSON). */
  async admin(method: string, path: string, body?: unknown): Promise<{ status: number; body: unknown }> {
    const { url } = await this.running();
    const response = await fetch(`${url}/_sim${path}`, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: response.status, body: await response.json() };
  }
}

export const GPU = 'NVIDIA L40S';
export const REGION = 'us-east-1';

/** A valid v2 pod create request. */
export function podRequest(name: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { name, image: 'ghcr.io/acme/trainer:1', gpuType: GPU, gpuCount: 1, regions: [REGION], ...extra };
}

/** A valid serverless endpoint create request. */
export function endpointRequest(name: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name,
    image: 'ghcr.io/acme/infer:1',
    resources: [{ region: REGION, gpuType: GPU, gpuCount: 1 }],
    ...extra,
  };
}

export interface Received {
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: unknown;
}

export interface Receiver {
  readonly url: string;
  readonly received: Received[];
  close(): Promise<void>;
}

/**
 * A local HTTP server that records every POST it gets and answers the status `answer` gives for
 * the nth request (1-based); closed when the test `t` ends.
 */
export async function startReceiver(
  t: TestContext,
  answer: (nth: number) => number = () => 200,
): Promise<Receiver> {
  const received: Received[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      received.push({
        path: request.url ?? '',
        headers: request.headers,
        body: JSON.parse(Buffer.concat(chunks).toString('utf8')),
      });
      response.writeHead(answer(received.length)).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  t.after(close);
  return { url: `http://127.0.0.1:${port}`, received, close };
}
