import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { makeAccount, RotatingKey } from '../../src/managed/accounts/account-registry.ts';
import {
  type Account,
  type AccountPolicy,
  type BudgetLimit,
  Usage,
} from '../../src/managed/accounts/accounts.ts';
import { guardedAdapter } from '../../src/managed/accounts/guardrails.ts';
import type { Demand } from '../../src/managed/core/demand.ts';
import { ReconcileError } from '../../src/managed/core/errors.ts';
import {
  type ActContext,
  type ExternalKind,
  type ManagedObject,
  meteringOf,
  type Plan,
} from '../../src/managed/core/external-kind.ts';
import { MovableClock } from '../support/clock.ts';
import { FakeCloud, type Widget, type WidgetSpec } from './fakes.ts';

// The account's policy in front of every create and every step that adds GPUs: each refusal, and the
// reservation that makes concurrent checks see each other.

const log = pino({ level: 'silent' });

function accountWith(policy: Partial<AccountPolicy>, live = 0, counted = true): Account {
  const key = new RotatingKey('k', async () => 'k');
  const made = makeAccount(
    'acme',
    'http://127.0.0.1:9/',
    key,
    { allowsNamespace: () => true, adoption: true, ...policy },
    { requestTimeoutMs: 1000, requestsPerSecond: 100, logger: log, registry: new Registry() },
  );
  const usage = new Usage();
  usage.meter('Widget', { heldGpus: () => live, counted: () => counted, spendPerHour: () => 0 });
  return { ...made, usage };
}

/** A cache whose answers the test sets. */
/** Stands still unless a test moves it: what a reservation waits for is then exact. */
const clock = new MovableClock();

function fakeCache() {
  const cache = {
    known: new Set<string>(),
    /** Ids no resource holds yet; every other is held. */
    unclaimed: new Set<string>(),
    listed: false,
    listedAsked: [] as number[],
    refreshes: 0,
    has: (id: string) => cache.known.has(id),
    claimed: (id: string) => !cache.unclaimed.has(id),
    listedSince: (at: number) => {
      cache.listedAsked.push(at);
      return cache.listed;
    },
    requestRefresh: () => {
      cache.refreshes++;
    },
  };
  return cache;
}

/** The fake widget kind asking for `demand`, with an optional plan. */
function kindAsking(cloud: FakeCloud, demand: Demand, plan?: Plan): ExternalKind<WidgetSpec, Widget> {
  const base = cloud.kind();
  return {
    ...base,
    metering: { ...meteringOf(base), demand: async () => demand },
    ...(plan && { plan: async () => plan }),
  };
}

const ctx: ActContext = {
  resolveEnv: async () => [],
  secretsChanged: () => false,
  ownerMarker: { key: 'OWNER', value: 'uid-1' },
};

const mr: ManagedObject<WidgetSpec> = {
  apiVersion: 'v1',
  kind: 'Widget',
  metadata: { namespace: 'ns-a', name: 'w', uid: 'uid-1', generation: 1, resourceVersion: '1' },
  spec: {},
};

async function refusal(promise: Promise<unknown>): Promise<ReconcileError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof ReconcileError, String(error));
    return error;
  }
  assert.fail('expected a refusal');
}

const gpus = (count: number, types: string[] = ['W1']) => ({ types, count });
const creates = (cloud: FakeCloud) => cloud.calls.filter((call) => call.op === 'create').length;

describe('a create is checked against the account policy', () => {
  const refusals: Array<{
    name: string;
    policy: Partial<AccountPolicy>;
    demand: Demand;
    reason: string;
    message: string;
    terminal: boolean;
    live?: number;
  }> = [
    {
      name: 'a registry auth not on the allow-list',
      policy: { registryAuthIds: new Set(['ra-1']) },
      demand: { live: true, containerRegistryAuthId: 'ra-2' },
      reason: 'NotAllowedByProviderConfig',
      message: 'provider config acme: containerRegistryAuthId ra-2 is not on its allow-list',
      terminal: true,
    },
    {
      name: 'a credential not on the allow-list',
      policy: { credentialIds: new Set(['c-1']) },
      demand: { live: true, credentialId: 'c-2' },
      reason: 'NotAllowedByProviderConfig',
      message: 'provider config acme: credentialId c-2 is not on its allow-list',
      terminal: true,
    },
    {
      name: 'a GPU type not allowed',
      policy: { gpuTypes: new Set(['W1']) },
      demand: { live: true, gpus: gpus(1, ['W1', 'W9']) },
      reason: 'GuardrailExceeded',
      message: 'provider config acme: GPU type W9 is not allowed',
      terminal: true,
    },
    {
      name: 'more GPUs than one resource may have',
      policy: { maxGpusPerResource: 2 },
      demand: { live: true, gpus: gpus(3) },
      reason: 'GuardrailExceeded',
      message: 'provider config acme: 3 GPUs exceed its limit of 2 per resource',
      terminal: true,
    },
    {
      name: 'more live GPUs than the account may have',
      policy: { maxLiveGpus: 4 },
      demand: { live: true, gpus: gpus(2) },
      live: 3,
      reason: 'GuardrailExceeded',
      message:
        'provider config acme: 2 more GPUs would make 5 live, over its limit of 4; retried as GPUs free up',
      terminal: false,
    },
  ];
  for (const refused of refusals) {
    test(`refused: ${refused.name}, and nothing is sent`, async () => {
      const cloud = new FakeCloud();
      const adapter = guardedAdapter(
        kindAsking(cloud, refused.demand),
        accountWith(refused.policy, refused.live),
        fakeCache(),
        clock,
      );
      const error = await refusal(adapter.create(mr, ctx));
      assert.equal(error.reason, refused.reason);
      assert.equal(error.message, refused.message);
      assert.equal(error.terminal, refused.terminal);
      assert.deepEqual(cloud.calls, []);
    });
  }

  const allowed: Array<{ name: string; policy: Partial<AccountPolicy>; demand: Demand; live?: number }> = [
    {
      name: 'a registry auth and credential on their allow-lists',
      policy: { registryAuthIds: new Set(['ra-1']), credentialIds: new Set(['c-1']) },
      demand: { live: true, containerRegistryAuthId: 'ra-1', credentialId: 'c-1' },
    },
    {
      name: 'no registry auth or credential against allow-lists',
      policy: { registryAuthIds: new Set(['ra-1']), credentialIds: new Set(['c-1']) },
      demand: { live: true },
    },
    {
      name: 'any registry auth, credential and GPU type without allow-lists',
      policy: {},
      demand: { live: true, containerRegistryAuthId: 'x', credentialId: 'y', gpus: gpus(1, ['Z']) },
    },
    {
      name: 'allowed GPU types, at the per-resource limit',
      policy: { gpuTypes: new Set(['W1', 'W2']), maxGpusPerResource: 2 },
      demand: { live: true, gpus: gpus(2, ['W1', 'W2']) },
    },
    {
      name: 'exactly the live limit',
      policy: { maxLiveGpus: 4 },
      demand: { live: true, gpus: gpus(1) },
      live: 3,
    },
    {
      name: 'no GPUs, whatever the limits',
      policy: { maxLiveGpus: 0, gpuTypes: new Set(), maxGpusPerResource: 0 },
      demand: { live: true },
      live: 9,
    },
    {
      name: 'zero GPUs against a full account',
      policy: { maxLiveGpus: 1 },
      demand: { live: true, gpus: gpus(0) },
      live: 5,
    },
    { name: 'no live limit', policy: {}, demand: { live: true, gpus: gpus(64) }, live: 1000 },
  ];
  for (const ok of allowed) {
    test(`allowed: ${ok.name}`, async () => {
      const cloud = new FakeCloud();
      const adapter = guardedAdapter(
        kindAsking(cloud, ok.demand),
        accountWith(ok.policy, ok.live),
        fakeCache(),
        clock,
      );
      const made = await adapter.create(mr, ctx);
      assert.equal(cloud.objects.get(made.id)?.status, 'RUNNING');
    });
  }

  test('before every kind has listed the account, a GPU limit refuses for now (UsageNotCounted)', async () => {
    const cloud = new FakeCloud();
    const adapter = guardedAdapter(
      kindAsking(cloud, { live: true, gpus: gpus(1) }),
      accountWith({ maxLiveGpus: 10 }, 0, false),
      fakeCache(),
      clock,
    );
    const error = await refusal(adapter.create(mr, ctx));
    assert.equal(error.reason, 'UsageNotCounted');
    assert.equal(error.terminal, false);
    assert.equal(
      error.message,
      'provider config acme: its objects of every kind are not listed yet; retried shortly',
    );
    assert.deepEqual(cloud.calls, []);
  });

  test('without a GPU limit, or with nothing to add, an uncounted account does not refuse', async () => {
    const cloud = new FakeCloud();
    await guardedAdapter(
      kindAsking(cloud, { live: true, gpus: gpus(1) }),
      accountWith({}, 0, false),
      fakeCache(),
      clock,
    ).create(mr, ctx);
    await guardedAdapter(
      kindAsking(cloud, { live: true, gpus: gpus(0) }),
      accountWith({ maxLiveGpus: 1 }, 0, false),
      fakeCache(),
      clock,
    ).create(mr, ctx);
    assert.equal(cloud.live().length, 2);
  });
});

describe('the reservation of a create', () => {
  test('counts its GPUs from the check until the cache counts the object it made', async () => {
    const cloud = new FakeCloud();
    const account = accountWith({ maxLiveGpus: 10 }, 1);
    const cache = fakeCache();
    const totals: number[] = [];
    cloud.duringCreate = () => {
      // A list made while the create is in flight says nothing of it.
      cache.listed = true;
      totals.push(account.usage.total());
      cache.listed = false;
    };
    const adapter = guardedAdapter(kindAsking(cloud, { live: true, gpus: gpus(3) }), account, cache, clock);
    const made = await adapter.create(mr, ctx);
    assert.deepEqual(totals, [4], 'held while the create is in flight, whatever the lists say');
    assert.equal(account.usage.total(), 4, 'held until the cache has the object');
    cache.known.add(made.id);
    assert.equal(account.usage.total(), 1);
  });

  test("once cached, the object is the meters' as nobody's: held for a namespace budget until a resource holds it", async () => {
    const cloud = new FakeCloud();
    const team = {
      name: 'team',
      limit: () => ({ perHour: 100, by: 'maxSpendPerHour' }),
      accountWide: false,
      covers: (ns: string) => ns === 'ns-a',
      pausesPods: false,
    };
    const account = accountWith({ maxLiveGpus: 10, budgets: [team] }, 0);
    const cache = fakeCache();
    const demand: Demand = { live: true, gpus: gpus(2), perHour: async () => 3 };
    const adapter = guardedAdapter(kindAsking(cloud, demand), account, cache, clock);
    const inNamespace = (ns: string | undefined) => ns === 'ns-a';
    const everything = () => true;
    const made = await adapter.create(mr, ctx);
    assert.deepEqual([account.usage.total(), account.usage.spendPerHour(inNamespace)], [2, 3], 'in flight');
    cache.unclaimed.add(made.id);
    cache.known.add(made.id);
    assert.equal(account.usage.total(), 0, 'the GPU meter counts it now (the fake meter counts 0)');
    assert.equal(account.usage.spendPerHour(everything), 0, 'so does an account-wide spend');
    assert.equal(
      account.usage.spendPerHour(inNamespace),
      3,
      "not the namespace's yet: still reserved for it",
    );
    cache.unclaimed.delete(made.id);
    assert.equal(account.usage.spendPerHour(inNamespace), 0, 'held by a resource: the meters count it');
    const abandoned = await adapter.create(mr, ctx);
    cache.unclaimed.add(abandoned.id);
    cache.known.add(abandoned.id);
    assert.equal(account.usage.spendPerHour(inNamespace), 3);
    cache.known.delete(abandoned.id);
    assert.equal(account.usage.spendPerHour(inNamespace), 0, 'counted once, then gone: released');
    // Deleted before anything looked: released by the first list made after its create ended.
    const unseen = await adapter.create(mr, ctx);
    assert.equal(account.usage.spendPerHour(inNamespace), 3);
    assert.equal(cache.known.has(unseen.id), false);
    cache.listed = true;
    assert.equal(account.usage.spendPerHour(inNamespace), 0);
  });

  test('of a failed create, holds until a list made after it ended', async () => {
    const cloud = new FakeCloud();
    const account = accountWith({ maxLiveGpus: 10 }, 0);
    const cache = fakeCache();
    cloud.failNextCreate = new Error('timeout');
    const adapter = guardedAdapter(kindAsking(cloud, { live: true, gpus: gpus(2) }), account, cache, clock);
    // The create takes five seconds before it fails: only a list after it ended can tell.
    cloud.duringCreate = () => clock.advance(5_000);
    const started = clock.now();
    await assert.rejects(adapter.create(mr, ctx), /timeout/);
    assert.equal(account.usage.total(), 2, 'it may have landed');
    assert.deepEqual(cache.listedAsked, [started + 5_000], 'a list since the create ended');
    cache.listed = true;
    assert.equal(account.usage.total(), 0);
  });

  test('concurrent creates each see what the others reserved', async () => {
    const cloud = new FakeCloud();
    cloud.createDelayMs = 20;
    const account = accountWith({ maxLiveGpus: 3 }, 0);
    const adapter = guardedAdapter(
      kindAsking(cloud, { live: true, gpus: gpus(2) }),
      account,
      fakeCache(),
      clock,
    );
    const results = await Promise.allSettled([adapter.create(mr, ctx), adapter.create(mr, ctx)]);
    assert.deepEqual(
      results.map((result) => result.status),
      ['fulfilled', 'rejected'],
    );
  });
});

/** A resume, as the kind plans it for a paused object: `run` is its cloud call. */
const resume = (run: () => void = () => {}): Plan => ({
  kind: 'act',
  step: { reason: 'Resuming', describe: 'resuming', run: async () => run() },
});
const paused: Widget = {
  id: '7',
  name: 'w',
  status: 'PAUSED',
  size: 2,
  spot: false,
  createdAt: 0,
  org: 'org-1',
};

describe('a step that adds GPUs', () => {
  test('is checked when it runs, not when it is planned, and nothing runs when refused', async () => {
    const cloud = new FakeCloud();
    let ran = 0;
    const cache = fakeCache();
    const adapter = guardedAdapter(
      kindAsking(
        cloud,
        { live: true, gpus: gpus(2) },
        resume(() => ran++),
      ),
      accountWith({ maxLiveGpus: 3 }, 2),
      cache,
      clock,
    );
    const plan = await adapter.plan(mr, paused, ctx);
    assert.equal(plan.kind, 'act');
    assert.ok(plan.kind === 'act');
    assert.equal(plan.step.reason, 'Resuming');
    const error = await refusal(plan.step.run());
    assert.equal(error.reason, 'GuardrailExceeded');
    assert.match(error.message, /2 more GPUs would make 4 live, over its limit of 3/);
    assert.equal(ran, 0);
  });

  test('that fits runs, is reserved until a list after it, and asks for that list', async () => {
    const cloud = new FakeCloud();
    let ran = 0;
    const cache = fakeCache();
    const account = accountWith({ maxLiveGpus: 4 }, 2);
    const adapter = guardedAdapter(
      kindAsking(
        cloud,
        { live: true, gpus: gpus(2) },
        resume(() => ran++),
      ),
      account,
      cache,
      clock,
    );
    const plan = await adapter.plan(mr, paused, ctx);
    assert.ok(plan.kind === 'act');
    await plan.step.run();
    assert.equal(ran, 1);
    assert.equal(cache.refreshes, 1);
    assert.equal(account.usage.total(), 4);
    cache.listed = true;
    assert.equal(account.usage.total(), 2);
  });

  test('is reserved while it runs, whatever the lists say', async () => {
    const cloud = new FakeCloud();
    const cache = fakeCache();
    cache.listed = true;
    const account = accountWith({ maxLiveGpus: 4 }, 2);
    const during: number[] = [];
    const adapter = guardedAdapter(
      kindAsking(
        cloud,
        { live: true, gpus: gpus(2) },
        resume(() => void during.push(account.usage.total())),
      ),
      account,
      cache,
      clock,
    );
    const plan = await adapter.plan(mr, paused, ctx);
    assert.ok(plan.kind === 'act');
    await plan.step.run();
    assert.deepEqual(during, [4]);
  });

  test('counts only what it adds to what the object holds already', async () => {
    const cloud = new FakeCloud();
    let ran = 0;
    const account = accountWith({ maxLiveGpus: 3 }, 2);
    const running: Widget = { ...paused, status: 'RUNNING', size: 1 };
    const adapter = guardedAdapter(
      kindAsking(
        cloud,
        { live: true, gpus: gpus(2) },
        resume(() => ran++),
      ),
      account,
      fakeCache(),
      clock,
    );
    const plan = await adapter.plan(mr, running, ctx);
    assert.ok(plan.kind === 'act');
    await plan.step.run();
    assert.equal(ran, 1, '1 more GPU fits: 3 of 3');
    assert.equal(account.usage.total(), 3);
  });

  test('a step that adds nothing (a pause, a step on a live object) is not checked', async () => {
    const cloud = new FakeCloud();
    let ran = 0;
    const step = resume(() => ran++);
    for (const [demand, held] of [
      [{ live: false, gpus: gpus(2) }, paused],
      [
        { live: true, gpus: gpus(2) },
        { ...paused, status: 'RUNNING' as const },
      ],
      [{ live: true }, paused],
    ] as const) {
      const adapter = guardedAdapter(
        kindAsking(cloud, demand, step),
        accountWith({ maxLiveGpus: 0 }, 9),
        fakeCache(),
        clock,
      );
      const plan = await adapter.plan(mr, held, ctx);
      assert.equal(plan, step, 'the plan as the kind made it');
    }
    const waiting: Plan = { kind: 'wait', reason: 'moving' };
    const adapter = guardedAdapter(
      kindAsking(cloud, { live: true, gpus: gpus(2) }, waiting),
      accountWith({ maxLiveGpus: 0 }, 9),
      fakeCache(),
      clock,
    );
    assert.equal(await adapter.plan(mr, paused, ctx), waiting);
  });
});

describe('budgets in dollars', () => {
  /** A budget of `perHour`, on the whole account or on `namespaces`. */
  const budget = (perHour: number, namespaces?: string[]): BudgetLimit => ({
    name: namespaces ? 'team' : 'account',
    limit: () => ({ perHour, by: 'maxSpendPerHour' }),
    accountWide: namespaces === undefined,
    pausesPods: false,
    covers: (namespace) => namespaces === undefined || namespaces.includes(namespace),
  });
  /** An account whose live objects cost `spend` per hour, split by the namespace of each one's holder. */
  const accountSpending = (budgets: BudgetLimit[], spend: Record<string, number>, priced = true) => {
    const account = accountWith({ budgets }, 0);
    account.usage.meter('Widget', {
      heldGpus: () => 0,
      counted: () => true,
      spendPerHour: (scope) =>
        priced
          ? Object.entries(spend).reduce(
              (sum, [namespace, perHour]) =>
                sum + (scope(namespace === '-' ? undefined : namespace) ? perHour : 0),
              0,
            )
          : undefined,
    });
    return account;
  };
  const pricedAt = (perHour: number | undefined): Demand => ({
    live: true,
    gpus: gpus(1),
    perHour: async () => perHour,
  });

  test('a create that would go over is BudgetExceeded, retried later, and nothing is sent', async () => {
    const cloud = new FakeCloud();
    const account = accountSpending([budget(10)], { 'ns-a': 4, '-': 5 });
    const adapter = guardedAdapter(kindAsking(cloud, pricedAt(1.5)), account, fakeCache(), clock);
    const error = await refusal(adapter.create(mr, ctx));
    assert.equal(error.reason, 'BudgetExceeded');
    assert.equal(error.terminal, false);
    assert.equal(error.retryAfterMs, 10_000, 'looked at again steadily, as spend frees up');
    assert.equal(
      error.message,
      'provider config acme: budget account: $1.50/h more would make $10.50/h, over its maxSpendPerHour of $10.00/h; retried as spend frees up',
    );
    assert.equal(creates(cloud), 0);
    const fits = guardedAdapter(kindAsking(cloud, pricedAt(1)), account, fakeCache(), clock);
    await fits.create(mr, ctx);
    assert.equal(creates(cloud), 1, 'exactly up to the limit');
  });

  test("a namespaces' budget counts only the spend of resources of its namespaces", async () => {
    const cloud = new FakeCloud();
    // 8 per hour elsewhere (another namespace, and objects no resource holds) does not count against it.
    const account = accountSpending([budget(3, ['ns-a'])], { 'ns-a': 2, 'ns-b': 5, '-': 3 });
    await guardedAdapter(kindAsking(cloud, pricedAt(1)), account, fakeCache(), clock).create(mr, ctx);
    const error = await refusal(
      guardedAdapter(kindAsking(cloud, pricedAt(1.01)), account, fakeCache(), clock).create(mr, ctx),
    );
    assert.equal(error.reason, 'BudgetExceeded');
    assert.match(error.message, /budget team: \$1\.01\/h more would make \$4\.01\/h/);
    const other = { ...mr, metadata: { ...mr.metadata, namespace: 'ns-c' } };
    await guardedAdapter(kindAsking(cloud, pricedAt(50)), account, fakeCache(), clock).create(other, ctx);
    assert.equal(creates(cloud), 2, 'a namespace it does not cover is not held to it');
  });

  test('without a price, or before the live objects are priced, a covered create waits', async () => {
    const cloud = new FakeCloud();
    const unquoted = await refusal(
      guardedAdapter(
        kindAsking(cloud, pricedAt(undefined)),
        accountSpending([budget(100)], {}),
        fakeCache(),
        clock,
      ).create(mr, ctx),
    );
    assert.equal(unquoted.reason, 'BudgetExceeded');
    assert.match(unquoted.message, /quotes no price/);
    const pricing = await refusal(
      guardedAdapter(
        kindAsking(cloud, pricedAt(1)),
        accountSpending([budget(100)], {}, false),
        fakeCache(),
        clock,
      ).create(mr, ctx),
    );
    assert.equal(pricing.reason, 'UsageNotCounted');
    assert.equal(pricing.terminal, false);
    assert.equal(pricing.retryAfterMs, 2_000, 'looked at again soon: prices take a moment');
    assert.equal(
      pricing.message,
      'provider config acme: budget account: the prices of its live objects are being read; retried shortly',
    );
    assert.equal(creates(cloud), 0);
  });

  test('a kind that quotes no price at all waits under a budget, for a create or a step', async () => {
    const cloud = new FakeCloud();
    const unpriced: Demand = { live: true, gpus: gpus(1) };
    const account = accountSpending([budget(100)], {});
    const created = await refusal(
      guardedAdapter(kindAsking(cloud, unpriced), account, fakeCache(), clock).create(mr, ctx),
    );
    assert.equal(created.reason, 'BudgetExceeded');
    assert.equal(created.terminal, false, 'a price may be quoted later');
    assert.equal(created.retryAfterMs, 10_000);
    assert.equal(
      created.message,
      'provider config acme: budget account: the cloud quotes no price for it today, so it cannot be allowed',
    );
    const plan = await guardedAdapter(
      kindAsking(cloud, unpriced, resume()),
      account,
      fakeCache(),
      clock,
    ).plan(mr, paused, ctx);
    assert.ok(plan.kind === 'act');
    assert.equal((await refusal(plan.step.run())).reason, 'BudgetExceeded');
    assert.equal(creates(cloud), 0);
  });

  test('a step waits when the price it asks, or what the object costs now, is unknown', async () => {
    const cloud = new FakeCloud();
    const running: Widget = { ...paused, status: 'RUNNING', size: 1 };
    const cases: Array<{ name: string; demand: Demand; priceNow: number | undefined }> = [
      { name: 'the price it asks', demand: { ...pricedAt(undefined), gpus: gpus(3) }, priceNow: 2 },
      { name: 'what it costs now', demand: { ...pricedAt(6), gpus: gpus(3) }, priceNow: undefined },
    ];
    for (const { name, demand, priceNow } of cases) {
      const asked = kindAsking(cloud, demand, resume());
      const kind = { ...asked, metering: { ...meteringOf(asked), priceOf: async () => priceNow } };
      const plan = await guardedAdapter(kind, accountSpending([budget(100)], {}), fakeCache(), clock).plan(
        mr,
        running,
        ctx,
      );
      assert.ok(plan.kind === 'act', name);
      const error = await refusal(plan.step.run());
      assert.equal(error.reason, 'BudgetExceeded', name);
      assert.match(error.message, /quotes no price/, name);
    }
  });

  test('a resume is weighed at its whole price, whatever a paused object quotes', async () => {
    const cloud = new FakeCloud();
    // A kind whose paused objects still quote what they cost running (4 per hour at size 2).
    const asked = kindAsking(cloud, { ...pricedAt(4), gpus: gpus(2) }, resume());
    const kind = { ...asked, metering: { ...meteringOf(asked), priceOf: async () => 4 } };
    const plan = await guardedAdapter(
      kind,
      accountSpending([budget(5)], { 'ns-a': 2 }),
      fakeCache(),
      clock,
    ).plan(mr, paused, ctx);
    assert.ok(plan.kind === 'act');
    const error = await refusal(plan.step.run());
    assert.match(error.message, /\$4\.00\/h more would make \$6\.00\/h/);
  });

  test('no budget covering it: a step reads no price', async () => {
    const cloud = new FakeCloud();
    let read = 0;
    const counted = async () => {
      read++;
      return 1;
    };
    const asked = kindAsking(cloud, { live: true, gpus: gpus(2), perHour: counted }, resume());
    const kind = { ...asked, metering: { ...meteringOf(asked), priceOf: counted } };
    const running: Widget = { ...paused, status: 'RUNNING', size: 1 };
    const account = accountSpending([budget(1, ['ns-b'])], {});
    const plan = await guardedAdapter(kind, account, fakeCache(), clock).plan(mr, running, ctx);
    assert.ok(plan.kind === 'act');
    await plan.step.run();
    assert.equal(read, 0);
  });

  test('a budget over its limit holds only the namespaces it covers', async () => {
    const cloud = new FakeCloud();
    const account = accountSpending([budget(3, ['ns-b'])], { 'ns-b': 4 });
    await guardedAdapter(kindAsking(cloud, pricedAt(1)), account, fakeCache(), clock).create(mr, ctx);
    assert.equal(creates(cloud), 1);
  });

  test('dollars from 100 up are said without cents', async () => {
    const cloud = new FakeCloud();
    const error = await refusal(
      guardedAdapter(
        kindAsking(cloud, pricedAt(2)),
        accountSpending([budget(100)], { 'ns-a': 120 }),
        fakeCache(),
        clock,
      ).create(mr, ctx),
    );
    assert.equal(
      error.message,
      'provider config acme: budget account: $2.00/h more would make $122/h, over its maxSpendPerHour of $100/h; retried as spend frees up',
    );
  });

  test('no budget: no price is read at all', async () => {
    const cloud = new FakeCloud();
    let read = 0;
    const demand: Demand = {
      live: true,
      gpus: gpus(1),
      perHour: async () => {
        read++;
        return 1;
      },
    };
    await guardedAdapter(kindAsking(cloud, demand), accountWith({}, 0), fakeCache(), clock).create(mr, ctx);
    assert.equal(read, 0);
  });

  test('50 creates at once against a slow cloud and a budget that fits 10: exactly 10 are sent', async () => {
    const cloud = new FakeCloud();
    cloud.createDelayMs = 30;
    const account = accountSpending([budget(10)], {});
    const adapter = guardedAdapter(kindAsking(cloud, pricedAt(1)), account, fakeCache(), clock);
    const results = await Promise.allSettled(Array.from({ length: 50 }, () => adapter.create(mr, ctx)));
    const refused = results.filter((result) => result.status === 'rejected');
    assert.equal(creates(cloud), 10);
    assert.equal(refused.length, 40);
    for (const result of refused) {
      assert.ok(result.reason instanceof ReconcileError && result.reason.reason === 'BudgetExceeded');
    }
    assert.equal(
      account.usage.spendPerHour(() => true),
      10,
      'reserved until the lists count them',
    );
  });

  test('a resume or scale-up is weighed at what it adds beyond what the object costs now', async () => {
    const cloud = new FakeCloud();
    let ran = 0;
    const plan: Plan = {
      kind: 'act',
      step: { reason: 'Scaling', describe: 'up', run: async () => void ran++ },
    };
    const running: Widget = {
      id: '7',
      name: 'w',
      status: 'RUNNING',
      size: 1,
      spot: false,
      createdAt: 0,
      org: 'org-1',
    };
    // The object runs at size 1 (2 per hour, the fake's price); the spec asks size 3, at 6 per hour.
    const demand: Demand = { live: true, gpus: gpus(3), perHour: async () => 6 };
    const account = accountSpending([budget(7)], { 'ns-a': 2 });
    const step = await guardedAdapter(kindAsking(cloud, demand, plan), account, fakeCache(), clock).plan(
      mr,
      running,
      ctx,
    );
    assert.ok(step.kind === 'act');
    await step.step.run();
    assert.equal(ran, 1, '2 + 4 fits 7');
    const tighter = accountSpending([budget(5.5)], { 'ns-a': 2 });
    const refused = await guardedAdapter(kindAsking(cloud, demand, plan), tighter, fakeCache(), clock).plan(
      mr,
      running,
      ctx,
    );
    assert.ok(refused.kind === 'act');
    const error = await refusal(refused.step.run());
    assert.equal(error.reason, 'BudgetExceeded');
    assert.match(error.message, /\$4\.00\/h more would make \$6\.00\/h/);
    assert.equal(ran, 1);
  });
});
