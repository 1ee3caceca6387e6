import assert from 'node:assert/strict';
import { afterEach, describe, test } from 'node:test';
import type { BudgetLimit } from '../../src/managed/accounts/accounts.ts';
import { EXTERNAL_ID } from '../../src/managed/core/annotations.ts';
import { meteringOf } from '../../src/managed/core/external-kind.ts';
import { BudgetShedding } from '../../src/managed/lifecycle/budget-shedding.ts';
import { until } from '../support/until.ts';
import {
  cannotPause,
  type Kind,
  parseWidgetSpec,
  pausesOnlyAtDeadlines,
  type Widget,
  type WidgetSpec,
} from './fakes.ts';
import { type WidgetWorld, widgetWorld } from './world.ts';

// A budget that pauses pods when it is exceeded, one decision at a time on the real account link of the
// fake widget kind (its cache, and its metering of prices): which pods it picks, and the spend it counts
// as shed until the cache shows them paused. A widget of size 1 costs 2 per hour.

const opened: WidgetWorld[] = [];
afterEach(async () => {
  for (const world of opened.splice(0)) await world.close();
});

/** A budget on the whole account that pauses pods, over its limit of `perHour` (which a test may move). */
function budget(perHour: number, more: Partial<BudgetLimit> = {}) {
  const limit = { perHour };
  const made: BudgetLimit = {
    name: 'team',
    limit: () => ({ perHour: limit.perHour, by: 'maxSpendPerHour' }),
    accountWide: true,
    covers: () => true,
    pausesPods: true,
    ...more,
  };
  return { budget: made, limit };
}

interface Pod {
  /** GPU utilisation as the status last reported it; none: no samples. */
  utilization?: number;
  size?: number;
  /** spec.pauseOnBudget; true unless said. */
  allows?: boolean;
  namespace?: string;
  status?: Widget['status'];
  /** How the resource holds the object: its status (the default), or only the external-id annotation. */
  heldBy?: 'status' | 'annotation';
  /** The rest of the resource's status (a pause the operator took). */
  more?: Record<string, unknown>;
  /** The stored spec as it is (one that does not parse, say). */
  spec?: Record<string, unknown>;
}

function open(budgets: BudgetLimit[] | undefined, change?: (kind: Kind) => Kind) {
  const world = widgetWorld({ policy: { budgets }, adapt: change, still: true });
  opened.push(world);
  const { api, cloud, clock, link } = world;
  const shedding = new BudgetShedding<WidgetSpec, Widget>({
    store: api.store,
    parseSpec: parseWidgetSpec,
    clock,
  });
  const ids = new Map<string, string>();
  let started = false;
  /** The object as the cloud has it now, as an observation reads it. */
  const observed = (key: string): Widget => {
    const widget = cloud.objects.get(String(ids.get(key)));
    if (!widget) throw new Error(`no object for ${key}`);
    return { ...widget };
  };
  return {
    ...world,
    shedding,
    /** A widget and the resource that holds it; an object no resource holds when `name` starts with `outside`. */
    pod(name: string, pod: Pod = {}): void {
      const namespace = pod.namespace ?? 'ns-a';
      const widget = cloud.put({ name, size: pod.size ?? 1, status: pod.status ?? 'RUNNING' });
      ids.set(`${namespace}/${name}`, widget.id);
      if (pod.utilization !== undefined) cloud.utilization.set(widget.id, pod.utilization);
      if (name.startsWith('outside')) return;
      const spec = pod.spec ?? { pauseOnBudget: pod.allows ?? true };
      const byAnnotation = pod.heldBy === 'annotation';
      api.create(name, spec, byAnnotation ? { annotations: { [EXTERNAL_ID]: widget.id } } : {}, namespace);
      if (!byAnnotation) api.setStatus(`${namespace}/${name}`, { id: widget.id, ...pod.more });
    },
    idOf: (key: string) => String(ids.get(key)),
    observed,
    decide: (key: string, as?: Widget) => shedding.decide(world.resource(key), as ?? observed(key), link),
    spend: () => link.account.usage.spendPerHour(() => true),
    /** Lists, and waits until the cache shows every object as the cloud has it and every price is read. */
    async listed(): Promise<void> {
      if (!started) world.start();
      started = true;
      link.cache.requestRefresh();
      const shows = () =>
        [...cloud.objects.values()].every((widget) => {
          const cached = link.cache.objects().find((each) => each.id === widget.id);
          return cached?.status === widget.status;
        }) && link.cache.objects().length === cloud.objects.size;
      await until(
        () => shows() && link.account.usage.spendPerHour(() => true) !== undefined,
        'listed',
        5_000,
      );
    },
  };
}

type World = ReturnType<typeof open>;

/** Whether the pod at `key` is one to pause for the budget now. */
const picked = async (w: World, key: string) => (await w.decide(key)) !== undefined;

describe('over its limit, a budget pauses', () => {
  test('the idlest pod that allows it, no more than it takes, and counts it shed until the cache shows it paused', async () => {
    const { budget: team } = budget(4.5);
    const w = open([team]);
    w.pod('busy', { utilization: 60 });
    w.pod('idle', { utilization: 3 });
    w.pod('kept', { utilization: 1, allows: false });
    await w.listed();
    assert.equal(w.spend(), 6);
    assert.equal(w.link.account.usage.total(), 3);

    assert.equal(await w.decide('ns-a/busy'), undefined, 'the idle one covers it');
    assert.equal(
      await w.decide('ns-a/idle'),
      'budget team: what it covers costs $6.00/h, over its maxSpendPerHour of $4.50/h; pausing the idlest pods that allow it (spec.pauseOnBudget) until it is within',
    );
    assert.equal(w.spend(), 4, 'shed at once: the next decision sees it');
    assert.equal(w.link.account.usage.total(), 2);
    assert.equal(await w.decide('ns-a/busy'), undefined, 'nothing more to shed');

    // Paused in the cloud, and listed: the meters count it at nothing, and the shed is let go.
    const idle = w.cloud.objects.get(w.idOf('ns-a/idle'));
    assert.ok(idle);
    idle.status = 'PAUSED';
    await w.listed();
    assert.equal(w.spend(), 4);
    assert.equal(w.link.account.usage.total(), 2);
  });

  test('what it sheds is let go when the object leaves the lists, or two minutes after a pause that never shows', async () => {
    const { budget: team, limit } = budget(3);
    const w = open([team]);
    w.pod('first', { utilization: 1 });
    w.pod('second', { utilization: 2 });
    await w.listed();
    assert.equal(await picked(w, 'ns-a/first'), true);
    assert.equal(w.spend(), 2);
    w.cloud.objects.delete(w.idOf('ns-a/first'));
    await w.listed();
    assert.equal(w.spend(), 2, 'gone: counted by nobody, shed no more');

    limit.perHour = 1;
    assert.equal(await picked(w, 'ns-a/second'), true);
    assert.equal(w.spend(), 0);
    w.clock.advance(120_000);
    assert.equal(w.spend(), 0, 'held for two minutes');
    w.clock.advance(1);
    assert.equal(w.spend(), 2, 'a pause that never shows is not counted forever');
  });

  test('exactly as much as it takes: a pod that brings it to its limit is the last', async () => {
    const { budget: team } = budget(4);
    const w = open([team]);
    w.pod('idlest', { utilization: 1 });
    w.pod('next', { utilization: 2 });
    w.pod('busy', { utilization: 90 });
    await w.listed();
    assert.equal(await picked(w, 'ns-a/next'), false, '6 over 4: the idlest sheds 2, enough');
    assert.equal(await picked(w, 'ns-a/idlest'), true);
  });

  test('of pods as idle, the dearest first; a pod with no samples counts as idle', async () => {
    const { budget: team } = budget(7);
    const w = open([team]);
    w.pod('cheap', { utilization: 5 });
    w.pod('dear', { utilization: 5, size: 2 });
    w.pod('busy', { utilization: 50 });
    await w.listed();
    assert.equal(await picked(w, 'ns-a/cheap'), false);
    assert.equal(await picked(w, 'ns-a/dear'), true);

    const { budget: other } = budget(3);
    const v = open([other]);
    v.pod('measured', { utilization: 1 });
    v.pod('unmeasured');
    await v.listed();
    assert.equal(await picked(v, 'ns-a/measured'), false);
    assert.equal(await picked(v, 'ns-a/unmeasured'), true);
  });

  test('a pod its resource holds only by the external-id annotation yet', async () => {
    const { budget: team } = budget(3);
    const w = open([team]);
    w.pod('adopted', { heldBy: 'annotation' });
    w.pod('busy', { utilization: 40 });
    await w.listed();
    assert.equal(await picked(w, 'ns-a/adopted'), true);
  });
});

describe('no candidate, though idler than the pod that is paused', () => {
  // Three pods of 2 per hour over a limit of 4 (3 when the idler is not counted): one pod is enough.
  const rows: Array<{
    name: string;
    idler: Pod;
    limit?: number;
    change?: (kind: Kind) => Kind;
    budget?: Partial<BudgetLimit>;
  }> = [
    { name: 'a pod that does not allow it', idler: { allows: false } },
    {
      name: 'a pod the operator paused already (its pause in flight)',
      idler: {
        more: {
          pausedBy: {
            reason: 'Idle',
            message: 'paused by the operator: at 0%',
            since: '2026-11-26T10:00:00.000Z',
            generation: 1,
          },
        },
      },
    },
    {
      name: 'a pod whose stored spec does not parse',
      idler: { spec: { pauseOnBudget: 'yes' } },
    },
    {
      name: 'a pod in a namespace the budget does not count',
      idler: { namespace: 'ns-b' },
      limit: 3,
      budget: { accountWide: false, covers: (namespace) => namespace === 'ns-a' },
    },
    {
      name: 'a pod its user paused, whatever its price says',
      idler: { status: 'PAUSED' },
      limit: 3,
      // As a kind whose paused objects still quote their running price.
      change: (kind) => ({
        ...kind,
        metering: { ...meteringOf(kind), priceOf: async (widget) => widget.size * 2 },
      }),
    },
  ];
  for (const row of rows) {
    test(row.name, async () => {
      const { budget: team } = budget(row.limit ?? 4, row.budget);
      const w = open([team], row.change);
      w.pod('idler', { utilization: 0, ...row.idler });
      w.pod('paused', { utilization: 10 });
      w.pod('busy', { utilization: 50 });
      await w.listed();
      assert.equal(await picked(w, 'ns-a/paused'), true);
    });
  }

  test('an object no resource holds', async () => {
    const { budget: team } = budget(3);
    const w = open([team]);
    w.pod('outside', { utilization: 0 });
    w.pod('paused', { utilization: 10 });
    await w.listed();
    assert.equal(w.spend(), 4, 'counted against an account-wide budget all the same');
    assert.equal(await picked(w, 'ns-a/paused'), true);
  });
});

describe('a budget pauses nothing', () => {
  test('within its limit, to the cent', async () => {
    const { budget: team } = budget(4);
    const w = open([team]);
    w.pod('a', { utilization: 1 });
    w.pod('b', { utilization: 1 });
    await w.listed();
    assert.equal(await picked(w, 'ns-a/a'), false);
    assert.equal(await picked(w, 'ns-a/b'), false);
    assert.equal(w.spend(), 4, 'nothing shed');
  });

  const rows: Array<{
    name: string;
    budget?: Partial<BudgetLimit>;
    pod?: Pod;
    change?: (kind: Kind) => Kind;
  }> = [
    { name: 'that does not pause pods', budget: { pausesPods: false } },
    { name: 'that covers other namespaces', budget: { covers: (namespace) => namespace === 'ns-b' } },
    { name: 'of a pod that does not allow it', pod: { allows: false } },
    {
      name: 'of a pod nothing prices (pausing it sheds nothing known)',
      change: (kind) => ({
        ...kind,
        metering: { ...meteringOf(kind), priceOf: async (widget) => (widget.name === 'own' ? undefined : 2) },
      }),
    },
    {
      name: 'of a pod that costs nothing',
      change: (kind) => ({
        ...kind,
        metering: { ...meteringOf(kind), priceOf: async (widget) => (widget.name === 'own' ? 0 : 2) },
      }),
    },
    { name: 'on a kind that cannot pause', change: cannotPause },
    { name: 'on a kind that pauses but never for a budget', change: pausesOnlyAtDeadlines },
  ];
  for (const row of rows) {
    test(row.name, async () => {
      const { budget: team } = budget(1, row.budget);
      const w = open([team], row.change);
      w.pod('own', { utilization: 0, ...row.pod });
      w.pod('busy', { utilization: 50, allows: false });
      await w.listed();
      const before = w.spend();
      assert.equal(await w.decide('ns-a/own'), undefined);
      assert.equal(w.spend(), before, 'nothing shed');
    });
  }

  test('while the spend is not known: another kind of the account is still being priced', async () => {
    const { budget: team } = budget(1);
    const w = open([team]);
    w.pod('own', { utilization: 0 });
    await w.listed();
    w.link.account.usage.meter('Gadget', {
      heldGpus: () => 0,
      counted: () => true,
      spendPerHour: () => undefined,
    });
    assert.equal(w.spend(), undefined);
    assert.equal(await w.decide('ns-a/own'), undefined);
  });

  test('for a pod already paused, though the lists still show it running', async () => {
    const { budget: team } = budget(1);
    const w = open([team]);
    w.pod('own', { utilization: 0 });
    w.pod('busy', { utilization: 50 });
    await w.listed();
    const paused = { ...w.observed('ns-a/own'), status: 'PAUSED' as const };
    assert.equal(await w.decide('ns-a/own', paused), undefined);
    assert.equal(w.spend(), 4, 'nothing shed');
  });
});

describe('a pod under a budget that may pause it', () => {
  test('is looked at again every 30 s; any other, never for a budget', async () => {
    const pausing = budget(10).budget;
    const elsewhere = budget(10, { covers: (namespace) => namespace === 'ns-b' }).budget;
    const counting = budget(10, { pausesPods: false }).budget;
    const w = open([elsewhere, pausing, counting]);
    w.pod('allows');
    w.pod('refuses', { allows: false });
    assert.equal(w.shedding.watches(w.resource('ns-a/allows'), w.link), 30_000);
    assert.equal(w.shedding.watches(w.resource('ns-a/refuses'), w.link), undefined);

    const others = { 'only others': [elsewhere, counting], none: [], 'no budgets at all': undefined };
    for (const [name, budgets] of Object.entries(others)) {
      const v = open(budgets);
      v.pod('allows');
      assert.equal(v.shedding.watches(v.resource('ns-a/allows'), v.link), undefined, name);
    }
    for (const change of [cannotPause, pausesOnlyAtDeadlines]) {
      const v = open([pausing], change);
      v.pod('allows');
      assert.equal(v.shedding.watches(v.resource('ns-a/allows'), v.link), undefined);
    }
  });
});
