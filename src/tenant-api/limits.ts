// What the tenant API may take of an account, whoever asks: the cloud calls tenants cause come out of the
// account's own request budget (they go through the account's client and its limiter), and are held
// further to a share of their own, so that tenants reading logs can never starve the reconcilers.
import { RequestLimiter } from '../api/request-limiter.ts';
import { ServingError } from '../serving/status.ts';
import type { TenantApiMetrics } from './metrics.ts';

export interface TenantLimitSettings {
  /** Cloud calls per second the tenant API may send on one account, at most. */
  readonly callsPerSecond: number;
  /** Calls that may wait for that budget at once on one account; more are refused with 429. */
  readonly maxWaiting: number;
  /** Followed logs one user may hold open at once. */
  readonly streamsPerUser: number;
  /** Followed logs open at once on one account, whoever holds them. */
  readonly streamsPerAccount: number;
}

export class TenantLimits {
  readonly #settings: TenantLimitSettings;
  readonly #metrics: TenantApiMetrics;
  readonly #budgets = new Map<string, RequestLimiter>();
  readonly #userStreams = new Map<string, number>();
  readonly #accountStreams = new Map<string, number>();

  constructor(settings: TenantLimitSettings, metrics: TenantApiMetrics) {
    this.#settings = settings;
    this.#metrics = metrics;
  }

  /**
   * Takes `calls` of the account's tenant budget, waiting for them in line; refused (429) when the line is
   * already long, so that a crowd of tenants is told to come back rather than queued without end.
   */
  async spend(account: string, calls: number, signal: AbortSignal): Promise<void> {
    let budget = this.#budgets.get(account);
    if (!budget) {
      const { callsPerSecond } = this.#settings;
      budget = new RequestLimiter({ requestsPerSecond: callsPerSecond, burst: Math.ceil(callsPerSecond) });
      this.#budgets.set(account, budget);
    }
    if (budget.waiting + calls > this.#settings.maxWaiting) {
      this.#metrics.refused('account-budget');
      throw new ServingError(
        429,
        `the tenant API's share of account ${account}'s cloud calls is spent for now; retry shortly`,
        1,
      );
    }
    for (let call = 0; call < calls; call++) await budget.acquire(signal);
    this.#metrics.cloudCalls(account, calls);
  }

  /** Holds one followed log for `user` on `account`; the returned function lets it go. */
  openStream(user: string, account: string): () => void {
    const { streamsPerUser, streamsPerAccount } = this.#settings;
    const mine = this.#userStreams.get(user) ?? 0;
    const theirs = this.#accountStreams.get(account) ?? 0;
    if (mine >= streamsPerUser) {
      this.#metrics.refused('user-streams');
      throw new ServingError(
        429,
        `user ${user} already follows ${mine} logs, the most one user may; stop one first`,
        5,
      );
    }
    if (theirs >= streamsPerAccount) {
      this.#metrics.refused('account-streams');
      throw new ServingError(
        429,
        `${theirs} logs are followed on account ${account}, the most the tenant API allows at once; retry later`,
        5,
      );
    }
    this.#userStreams.set(user, mine + 1);
    this.#accountStreams.set(account, theirs + 1);
    this.#metrics.streamOpened(account);
    let open = true;
    return () => {
      if (!open) return;
      open = false;
      decrement(this.#userStreams, user);
      decrement(this.#accountStreams, account);
      this.#metrics.streamClosed(account);
    };
  }
}

function decrement(counts: Map<string, number>, key: string): void {
  const left = (counts.get(key) ?? 1) - 1;
  if (left > 0) counts.set(key, left);
  else counts.delete(key);
}
