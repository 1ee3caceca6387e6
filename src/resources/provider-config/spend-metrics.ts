import { Gauge, type Registry } from 'prom-client';
import type { SpendRecord } from './spend-record.ts';

/**
 * The accounts' spend as gauges, read at scrape time from the records the ProviderConfig controller keeps
 * (only the leader's are filled): what the spend alert reads, against each budget's own limit.
 */
export function registerSpendMetrics(registry: Registry, records: ReadonlyMap<string, SpendRecord>): void {
  const registers = [registry];
  const perBudget = (
    name: string,
    help: string,
    read: (budget: NonNullable<SpendRecord['budgets']>[number]) => number | undefined,
  ) =>
    new Gauge({
      name,
      help,
      labelNames: ['provider_config', 'budget'],
      registers,
      collect() {
        this.reset();
        for (const [config, record] of records) {
          for (const budget of record.budgets ?? []) {
            const value = read(budget);
            if (value !== undefined) this.set({ provider_config: config, budget: budget.name }, value);
          }
        }
      },
    });
  new Gauge({
    name: 'gpucloud_account_spend_dollars_per_hour',
    help: 'Dollars per hour every object of the account that holds GPUs costs now, managed or not, by ProviderConfig',
    labelNames: ['provider_config'],
    registers,
    collect() {
      this.reset();
      for (const [config, record] of records) this.set({ provider_config: config }, record.perHour);
    },
  });
  perBudget(
    'gpucloud_budget_spend_dollars_per_hour',
    'Dollars per hour what a budget covers costs now, by ProviderConfig and budget',
    (budget) => budget.perHour,
  );
  perBudget(
    'gpucloud_budget_limit_dollars_per_hour',
    'Dollars per hour a budget allows now (its hourly limit, or what its month leaves over the hours left)',
    (budget) => budget.limitPerHour,
  );
  perBudget(
    'gpucloud_budget_month_to_date_dollars',
    'Dollars a budget has spent this month (UTC), as the operator counts it',
    (budget) => budget.monthToDate,
  );
}
