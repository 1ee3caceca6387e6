// What an account's guardrails and budgets make of resources about to be created
// (src/resources/provider-config/verdicts.ts), on plain values: the account's spec, its live GPUs and spend.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Priced } from '../../src/resources/pricing/price-book.ts';
import type { SpendRate } from '../../src/resources/pricing/spend.ts';
import { ProviderConfigSpecSchema } from '../../src/resources/provider-config/schema.ts';
import {
  type AccountView,
  judgeAccount,
  type PlannedItem,
} from '../../src/resources/provider-config/verdicts.ts';

const L40S = 'NVIDIA L40S';

function config(
  guardrails: Record<string, unknown>,
  namespaces: Record<string, unknown> = { names: ['ml', 'web'] },
) {
  return ProviderConfigSpecSchema.parse({
    apiUrl: 'https://api.example.com',
    credentials: { secretRef: { namespace: 'accounts', name: 'key', key: 'api-key' } },
    namespaces,
    guardrails,
  });
}

function price(perHour: number, extra: Partial<Priced> = {}): Priced {
  return {
    priced: true,
    perHour,
    lowestPerHour: perHour,
    currency: 'USD',
    source: 'offers',
    exactness: 'quoted',
    basis: 'offer',
    ...extra,
  };
}

function item(perHour: number, gpus = 1, namespace = 'ml', extra: Partial<PlannedItem> = {}): PlannedItem {
  return {
    namespace,
    estimate: { price: price(perHour), gpus: { types: [L40S], count: gpus }, live: true },
    ...extra,
  };
}

function spend(perHour: number, unpriced = 0): SpendRate {
  return {
    perHour,
    lowestPerHour: perHour,
    counted: 1,
    unpriced: Array.from({ length: unpriced }, (_, i) => ({
      kind: 'GpuPod' as const,
      id: String(i),
      message: 'x',
    })),
    exact: false,
  };
}

/** The first instant of a 720-hour month. */
const NOVEMBER = Date.parse('2026-11-01T00:00:00Z');

function account(
  spec: ReturnType<typeof config>,
  budgetSpend: Record<string, SpendRate | { unknown: string }> = {},
  extra: Partial<AccountView> = {},
): AccountView {
  return {
    spec,
    budgetSpend: new Map(Object.entries(budgetSpend)),
    labelsOf: () => ({}),
    liveGpus: 0,
    monthToDate: () => 0,
    now: NOVEMBER,
    ...extra,
  };
}

const outcomes = (verdicts: ReadonlyArray<{ check: string; outcome: string }>) =>
  verdicts.filter((v) => v.check !== 'namespaces').map((v) => `${v.check}: ${v.outcome}`);

describe('budget verdicts', () => {
  it('an account budget refuses the resource that would take the spend over its hourly limit, and says by how much', () => {
    const spec = config({ budgets: [{ name: 'all', maxSpendPerHour: 10 }] });
    const judged = judgeAccount([item(3), item(3), item(3)], account(spec, { all: spend(2) }));
    assert.deepEqual(judged.items.map(outcomes), [
      ['budget all: allowed'],
      ['budget all: allowed'],
      ['budget all: refused'],
    ]);
    const refusal = judged.items[2]?.find((v) => v.check === 'budget all');
    assert.equal(
      refusal?.message,
      '3.0000 USD/h more would make 11.0000 USD/h, over its maxSpendPerHour of 10.0000 USD/h',
    );
    const [budget] = judged.budgets;
    assert.deepEqual([budget?.outcome, budget?.nowPerHour, budget?.addingPerHour], ['refused', 2, 6]);
    assert.match(budget?.message ?? '', /^2\.0000 USD\/h now; it would refuse 1 of the plan's resources/);
  });

  it('a monthly budget limits the rate to what the month leaves over the hours left, as the operator does', () => {
    // At the first instant of November (720 hours), with nothing spent: 1440 / 720 = 2 per hour.
    const spec = config({ budgets: [{ name: 'month', maxSpendPerMonth: 1440 }] });
    const judged = judgeAccount([item(1.5), item(0.6)], account(spec, { month: spend(0) }));
    assert.deepEqual(judged.items.map(outcomes), [['budget month: allowed'], ['budget month: refused']]);
    assert.match(
      judged.items[1]?.[1]?.message ?? '',
      /over its maxSpendPerMonth \(what it leaves this month: 2\.0000 USD\/h for the hours left\)/,
    );
  });

  it('a namespaced budget weighs only the resources of its namespaces, by name or by label', () => {
    const spec = config({
      budgets: [
        { name: 'ml', namespaces: { names: ['ml'] }, maxSpendPerHour: 1 },
        { name: 'gold', namespaces: { selector: { matchLabels: { tier: 'gold' } } }, maxSpendPerHour: 1 },
      ],
    });
    const labels: Record<string, Record<string, string>> = { web: { tier: 'gold' }, ml: {} };
    const judged = judgeAccount(
      [item(2, 1, 'ml'), item(0.5, 1, 'web')],
      account(spec, { ml: spend(0), gold: spend(0.4) }, { labelsOf: (ns) => labels[ns] }),
    );
    assert.deepEqual(judged.items.map(outcomes), [['budget ml: refused'], ['budget gold: allowed']]);
    assert.deepEqual(
      judged.budgets.map((b) => [b.budget, b.covers, b.outcome]),
      [
        ['ml', 'ml', 'refused'],
        ['gold', 'labels {"tier":"gold"}', 'allowed'],
      ],
    );
  });

  it('a resource that already holds a live object adds only what it adds beyond it', () => {
    const spec = config({ budgets: [{ name: 'all', maxSpendPerHour: 5 }], maxLiveGpus: 4 });
    const existing = item(4, 4, 'ml', { existing: { perHour: 4, gpus: 4 } });
    const judged = judgeAccount([existing], account(spec, { all: spend(4) }, { liveGpus: 4 }));
    assert.deepEqual(judged.items.map(outcomes), [[]], 'nothing added: no limit to pass');
    const bigger = item(6, 8, 'ml', { existing: { perHour: 4, gpus: 4 } });
    assert.deepEqual(
      judgeAccount([bigger], account(spec, { all: spend(4) }, { liveGpus: 4 })).items.map(outcomes),
      [['maxLiveGpus: refused', 'budget all: refused']],
    );
  });

  it('an autoscaled endpoint weighs at its most workers', () => {
    const spec = config({ budgets: [{ name: 'all', maxSpendPerHour: 5 }] });
    const autoscaled: PlannedItem = {
      namespace: 'ml',
      estimate: { price: price(1, { maxPerHour: 6 }), gpus: { types: [L40S], count: 6 }, live: true },
    };
    assert.deepEqual(judgeAccount([autoscaled], account(spec, { all: spend(0) })).items.map(outcomes), [
      ['budget all: refused'],
    ]);
  });

  it('what could not be read is unknown, with why, and the rate is said to be a lower bound while objects have no price', () => {
    const spec = config({
      budgets: [
        { name: 'all', maxSpendPerHour: 100 },
        { name: 'gold', namespaces: { selector: { matchLabels: { tier: 'gold' } } }, maxSpendPerHour: 1 },
      ],
    });
    const judged = judgeAccount(
      [item(1, 1, 'ml')],
      account(
        spec,
        { all: spend(3, 2), gold: { unknown: 'the caller may not list GpuPods in every namespace' } },
        {
          labelsOf: () => undefined,
        },
      ),
    );
    assert.deepEqual(
      judged.items.map((verdicts) => verdicts.map((v) => `${v.check}: ${v.outcome}`)),
      [['namespaces: allowed', 'budget all: allowed', 'budget gold: unknown']],
    );
    assert.deepEqual(
      judged.budgets.map((b) => [b.outcome, b.message]),
      [
        [
          'allowed',
          '3.0000 USD/h now (at least: 2 objects have no price), 4.0000 USD/h with the plan, within its maxSpendPerHour of 100.0000 USD/h',
        ],
        ['unknown', 'the caller may not list GpuPods in every namespace'],
      ],
    );
    const blind = judgeAccount([item(1)], {
      budgetSpend: new Map(),
      monthToDate: () => 0,
      now: NOVEMBER,
      labelsOf: () => undefined,
      problem: 'no cluster to read ProviderConfig team-a from',
    });
    assert.deepEqual(blind.items[0], [
      {
        check: 'guardrails',
        outcome: 'unknown',
        message: 'guardrails and budgets unknown: no cluster to read ProviderConfig team-a from',
      },
    ]);
  });
});

describe('guardrail verdicts', () => {
  it('refuses GPU types off the allow-list, too many GPUs per resource, and namespaces the account does not allow', () => {
    const spec = config({ gpuTypes: ['NVIDIA H100 80GB HBM3'], maxGpusPerResource: 2 });
    const judged = judgeAccount([item(1, 4, 'ml'), item(1, 1, 'other')], account(spec));
    assert.deepEqual(
      judged.items.map((verdicts) => verdicts.filter((v) => v.outcome === 'refused').map((v) => v.message)),
      [
        ['GPU type NVIDIA L40S is not allowed', '4 GPUs exceed its limit of 2 per resource'],
        [
          'namespace other may not use the account: it is not among its namespaces',
          'GPU type NVIDIA L40S is not allowed',
        ],
      ],
    );
  });

  it('counts the live GPUs and the plan before each resource against maxLiveGpus', () => {
    const spec = config({ maxLiveGpus: 8 });
    const judged = judgeAccount([item(1, 4), item(1, 2), item(1, 4)], account(spec, {}, { liveGpus: 2 }));
    assert.deepEqual(judged.items.map(outcomes), [
      ['maxLiveGpus: allowed'],
      ['maxLiveGpus: allowed'],
      ['maxLiveGpus: refused'],
    ]);
    assert.equal(judged.items[2]?.[1]?.message, '4 more GPUs would make 12 live, over its limit of 8');
  });

  it('a resource with no offer is refused whatever the account says; a CPU pod is unknown', () => {
    const none: PlannedItem = {
      namespace: 'ml',
      estimate: {
        price: { priced: false, reason: 'NoOfferMatches', message: 'no GPU offer matches 16 × X' },
        live: true,
      },
    };
    const cpu: PlannedItem = {
      namespace: 'ml',
      estimate: {
        price: { priced: false, reason: 'NotQuoted', message: 'a CPU pod has no price' },
        live: true,
      },
    };
    const judged = judgeAccount([none, cpu], account(config({})));
    assert.deepEqual(judged.items.map(outcomes), [['price: refused'], ['price: unknown']]);
  });
});
