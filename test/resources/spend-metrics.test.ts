import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Registry } from 'prom-client';
import { registerSpendMetrics } from '../../src/resources/provider-config/spend-metrics.ts';
import type { SpendRecord } from '../../src/resources/provider-config/spend-record.ts';

test("the gauges read each account's last spend record at scrape time", async () => {
  const registry = new Registry();
  const records = new Map<string, SpendRecord>();
  registerSpendMetrics(registry, records);
  assert.doesNotMatch(await registry.metrics(), /provider_config=/, 'nothing recorded, no series');
  records.set('team-a', {
    month: '2026-11',
    asOf: '2026-11-26T10:00:00.000Z',
    perHour: 12.5,
    monthToDate: 900,
    budgets: [{ name: 'vision', perHour: 6, monthToDate: 400, limitPerHour: 8, headroomPerHour: 2 }],
  });
  const text = await registry.metrics();
  assert.match(text, /gpucloud_account_spend_dollars_per_hour\{provider_config="team-a"\} 12\.5/);
  assert.match(text, /gpucloud_budget_spend_dollars_per_hour\{provider_config="team-a",budget="vision"\} 6/);
  assert.match(text, /gpucloud_budget_limit_dollars_per_hour\{provider_config="team-a",budget="vision"\} 8/);
  assert.match(text, /gpucloud_budget_month_to_date_dollars\{provider_config="team-a",budget="vision"\} 400/);
  records.delete('team-a');
  assert.doesNotMatch(await registry.metrics(), /team-a/, 'a config gone is gone from the gauges');
});
