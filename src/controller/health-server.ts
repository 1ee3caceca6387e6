import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Registry } from 'prom-client';
import type { Logger } from '../lib/logger.ts';
import { EventLoopMonitor } from './loop-lag-monitor.ts';

/**
 * One named probe check: `true` passes; `false`, a string (the reason) or an exception fails.
 * Checks should be cheap: probes call them every few seconds.
 */
export type HealthCheck = () => boolean | string | Promise<boolean | string>;

export interface HealthServerOptions {
  /** 0 picks a free port (see `port` after `start`). */
  readonly port: number;
  /** Defaults to all interfaces, where kubelet probes and Prometheus reach a pod. */
  readonly host?: string;
  readonly registry: Registry;
  readonly logger: Logger;
  /** `/healthz` fails when the event loop was blocked longer than this since the previous probe. */
  readonly maxEventLoopDelayMs?: number;
  /** A check that has not answered by then fails. */
  readonly checkTimeoutMs?: number;
}

interface CheckResult {
  readonly name: string;
  readonly ok: boolean;
  readonly reason?: string;
}

/**
 * `/healthz` (liveness: the event loop is responsive, plus added checks), `/readyz` (readiness:
 * added checks such as informers synced) and `/metrics` (the Prometheus registry), over node:http.
 * Probe bodies follow the apiserver's style: `ok`, or one `[+]`/`[-]` line per check.
 */
export class HealthServer {
  readonly #options: HealthServerOptions;
  readonly #liveness = new Map<string, HealthCheck>();
  readonly #readiness = new Map<string, HealthCheck>();
  readonly #maxEventLoopDelayMs: number;
  readonly #loop: EventLoopMonitor;
  #server: Server | undefined;

  constructor(options: HealthServerOptions) {
    this.#options = options;
    this.#maxEventLoopDelayMs = options.maxEventLoopDelayMs ?? 5_000;
    // Ticks well within the limit, so that a block just over the limit cannot hide between ticks.
    this.#loop = new EventLoopMonitor(Math.min(1_000, Math.max(10, this.#maxEventLoopDelayMs / 4)));
    this.#liveness.set('event-loop', () => this.#eventLoopCheck());
  }

  addHealthCheck(name: string, check: HealthCheck): void {
    this.#liveness.set(name, check);
  }

  addReadyCheck(name: string, check: HealthCheck): void {
    this.#readiness.set(name, check);
  }

  /** The bound port; valid after `start`. */
  get port(): number {
    const address = this.#server?.address();
    return typeof address === 'object' && address !== null ? address.port : 0;
  }

  async start(): Promise<void> {
    if (this.#server) return;
    const server = createServer((request, response) => {
      this.#handle(request, response).catch((err: unknown) => {
        this.#options.logger.error({ err, url: request.url }, 'health server request failed');
        if (!response.headersSent) response.writeHead(500);
        response.end();
      });
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.#options.port, this.#options.host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    this.#server = server;
    this.#loop.start();
    this.#options.logger.info({ port: this.port }, 'health and metrics server listening');
  }

  async stop(): Promise<void> {
    const server = this.#server;
    if (!server) return;
    this.#server = undefined;
    this.#loop.stop();
    server.closeIdleConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  async #handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? '/', 'http://localhost');
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      send(response, 405, 'text/plain; charset=utf-8', 'method not allowed\n');
      return;
    }
    switch (url.pathname) {
      case '/healthz':
      case '/livez':
        return this.#probe(response, this.#liveness, url.searchParams.has('verbose'));
      case '/readyz':
        return this.#probe(response, this.#readiness, url.searchParams.has('verbose'));
      case '/metrics': {
        const registry = this.#options.registry;
        send(response, 200, registry.contentType, await registry.metrics());
        return;
      }
      default:
        send(response, 404, 'text/plain; charset=utf-8', 'not found\n');
    }
  }

  async #probe(response: ServerResponse, checks: Map<string, HealthCheck>, verbose: boolean): Promise<void> {
    const results = await Promise.all([...checks].map(([name, check]) => this.#run(name, check)));
    const ok = results.every((result) => result.ok);
    const lines = results.map((r) => (r.ok ? `[+]${r.name} ok` : `[-]${r.name} failed: ${r.reason}`));
    const body = ok && !verbose ? 'ok\n' : `${lines.join('\n')}\n${ok ? 'check passed' : 'check failed'}\n`;
    send(response, ok ? 200 : 500, 'text/plain; charset=utf-8', body);
  }

  async #run(name: string, check: HealthCheck): Promise<CheckResult> {
    const timeoutMs = this.#options.checkTimeoutMs ?? 5_000;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<string>((resolve) => {
      timer = setTimeout(() => resolve(`no answer within ${timeoutMs} ms`), timeoutMs);
    });
    try {
      const verdict = await Promise.race([Promise.resolve().then(check), timeout]);
      if (verdict === true) return { name, ok: true };
      return { name, ok: false, reason: verdict === false ? 'not ready' : verdict };
    } catch (err) {
      return { name, ok: false, reason: err instanceof Error ? err.message : String(err) };
    } finally {
      clearTimeout(timer);
    }
  }

  /** The longest event-loop block since the previous probe. */
  #eventLoopCheck(): true | string {
    const worstMs = this.#loop.takeWorstDelayMs();
    const limitMs = this.#maxEventLoopDelayMs;
    return worstMs <= limitMs || `event loop blocked for ${Math.round(worstMs)} ms (limit ${limitMs} ms)`;
  }
}

function send(response: ServerResponse, status: number, contentType: string, body: string): void {
  response.writeHead(status, { 'content-type': contentType, 'cache-control': 'no-store' });
  response.end(body);
}
