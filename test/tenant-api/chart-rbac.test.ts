import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { installChart } from '../support/chart.ts';
import { useStack } from '../support/operator.ts';
import { tenantApiUnderItsGrants } from './installed-grants.ts';

// The tenant API under the chart's ServiceAccount, with only what the chart grants
// (test/deploy/tenant-api-manifests.test.ts runs the same checks for the plain manifests).
const stack = useStack();

describe("the tenant API under the chart's ServiceAccount", () => {
  const chart = tenantApiUnderItsGrants(
    stack,
    () => installChart(stack.plane(), { values: { tenantApi: { enabled: true } } }),
    (installed) => installed.uninstall(),
  );

  test('the install notes say how tenants use it, and what one replica without a budget risks', () => {
    assert.match(chart().notes, /Tenant API: tenants with the view role read logs, metrics and tasks/);
    assert.match(chart().notes, /this release has\s+1 replica\(s\) and no PodDisruptionBudget/);
  });
});
