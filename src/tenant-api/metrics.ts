import { Counter, Gauge, type Registry } from 'prom-client';

/** The tenant API on `/metrics` (docs/metrics.md). */
export class TenantApiMetrics {
  readonly #requests: Counter<'resource' | 'verb' | 'code'>;
  readonly #calls: Counter<'account'>;
  readonly #streams: Gauge<'account'>;
  readonly #refused: Counter<'reason'>;

  constructor(registry: Registry) {
    this.#requests = new Counter({
      name: 'gpucloud_tenant_api_requests_total',
      help: 'Requests the tenant API answered, by resource (plural/subresource), verb and HTTP code',
      labelNames: ['resource', 'verb', 'code'],
      registers: [registry],
    });
    this.#calls = new Counter({
      name: 'gpucloud_tenant_api_cloud_calls_total',
      help: "Cloud API calls the tenant API sent, by account (each also counts in the account's client metrics)",
      labelNames: ['account'],
      registers: [registry],
    });
    this.#streams = new Gauge({
      name: 'gpucloud_tenant_api_log_streams',
      help: 'Followed logs open now, by account',
      labelNames: ['account'],
      registers: [registry],
    });
    this.#refused = new Counter({
      name: 'gpucloud_tenant_api_refused_total',
      help: 'Requests refused by a limit (user-streams, account-streams, account-budget) or unauthenticated',
      labelNames: ['reason'],
      registers: [registry],
    });
  }

  answered(resource: string, verb: string, code: number): void {
    this.#requests.inc({ resource, verb, code: String(code) });
  }

  cloudCalls(account: string, calls: number): void {
    this.#calls.inc({ account }, calls);
  }

  streamOpened(account: string): void {
    this.#streams.inc({ account });
  }

  streamClosed(account: string): void {
    this.#streams.dec({ account });
  }

  refused(reason: 'user-streams' | 'account-streams' | 'account-budget' | 'unauthenticated'): void {
    this.#refused.inc({ reason });
  }
}
