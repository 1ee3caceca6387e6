import { Agent, request } from '../undici.ts';
import type { Scheduler } from './scheduler.ts';

export interface DeliveryOptions {
  /** Further attempts after the first one fails. */
  readonly retries: number;
  /** Delay before the first retry; each later retry waits twice as long as the one before. */
  readonly retryBaseMs: number;
  /** Time allowed for one attempt (real time: it bounds a network wait). */
  readonly timeoutMs: number;
}

export interface AttemptResult {
  /** 1 for the first attempt. */
  readonly attempt: number;
  readonly ok: boolean;
  /** True when no further attempt will be made. */
  readonly final: boolean;
}

/**
 * Sends the simulator's outgoing POSTs (pod callbacks, task webhooks) with bounded retries and a
 * growing delay. A receiver that answers 2xx has the message; anything else is retried.
 */
export class Courier {
  readonly #scheduler: Scheduler;
  readonly #options: DeliveryOptions;
  readonly #agent: Agent;
  #closed = false;

  constructor(scheduler: Scheduler, options: DeliveryOptions) {
    this.#scheduler = scheduler;
    this.#options = options;
    this.#agent = new Agent({
      connections: 32,
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
      connectTimeout: options.timeoutMs,
    });
  }

  send(
    url: string,
    body: unknown,
    headers: Record<string, string>,
    onAttempt?: (result: AttemptResult) => void,
  ): void {
    const payload = JSON.stringify(body);
    const attempt = (number: number): void => {
      if (this.#closed) return;
      void this.#post(url, payload, headers).then((ok) => {
        if (this.#closed) return;
        const final = ok || number > this.#options.retries;
        onAttempt?.({ attempt: number, ok, final });
        if (!final)
          this.#scheduler.after(this.#options.retryBaseMs * 2 ** (number - 1), () => attempt(number + 1));
      });
    };
    attempt(1);
  }

  async close(): Promise<void> {
    this.#closed = true;
    await this.#agent.destroy();
  }

  async #post(url: string, payload: string, headers: Record<string, string>): Promise<boolean> {
    try {
      const target = new URL(url);
      const response = await request(this.#agent, {
        origin: target.origin,
        path: target.pathname + target.search,
        method: 'POST',
        body: payload,
        headers: { 'content-type': 'application/json', ...headers },
        signal: AbortSignal.timeout(this.#options.timeoutMs),
      });
      await response.body.dump();
      return response.statusCode >= 200 && response.statusCode < 300;
    } catch {
      return false;
    }
  }
}
