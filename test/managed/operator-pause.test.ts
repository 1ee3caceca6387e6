import assert from 'node:assert/strict';
import { afterEach, describe, test } from 'node:test';
import type { BudgetLimit } from '../../src/managed/accounts/accounts.ts';
import { RESUME } from '../../src/managed/core/annotations.ts';
import { until } from '../support/until.ts';
import { conditionOf } from './fakes.ts';
import { type WidgetWorld, widgetWorld } from './world.ts';

// The operator's own pause (idle, deadline) on the fake widget kind: a record in status, never the spec,
// lifted only by the resource's user; and a deadline that deletes for good.

const KEY = 'ns-a/w';
/** The fake kind's idle window (30 minutes), and a moment: an object Ready this long ago may be idle. */
const IDLE_WINDOW_MS = 30 * 60_000 + 1_000;
const AT = { namespace: 'ns-a', name: 'w' };
let world: WidgetWorld;

afterEach(async () => world?.close());

function open(): WidgetWorld {
  world = widgetWorld();
  return world;
}

const ready = (w: WidgetWorld) => conditionOf(w.api.get(KEY), 'Ready');
const pausedBy = (w: WidgetWorld) => w.api.get(KEY)?.status?.pausedBy;
const objectOf = (w: WidgetWorld) => w.cloud.objects.get(String(w.api.get(KEY)?.status?.id));
const mutations = (w: WidgetWorld, op: string) => w.cloud.calls.filter((call) => call.op === op).length;

/** Reconciles until the idle schedule has had its turn and the check ran (its tick is real time, 250 ms). */
async function untilIdleChecked(w: WidgetWorld, checks: number): Promise<void> {
  await until(
    async () => {
      await w.reconciler.reconcile(AT);
      return mutations(w, 'idle') >= checks;
    },
    `idle check ${checks}`,
    5_000,
  );
}

describe('idle stop', () => {
  test('an idle object is paused once, with the reason in status, and spec.paused untouched', async () => {
    const w = open();
    w.api.create('w', { idleBelowPercent: 5 });
    await w.settle(KEY);
    const widget = objectOf(w);
    assert.ok(widget);
    w.clock.advance(IDLE_WINDOW_MS);
    w.cloud.utilization.set(widget.id, 2);
    await untilIdleChecked(w, 1);
    await w.settle(KEY);
    assert.equal(widget.status, 'PAUSED');
    assert.equal(pausedBy(w)?.reason, 'Idle');
    assert.match(String(pausedBy(w)?.message), /at 2%/);
    assert.deepEqual(
      w.api.get(KEY)?.spec,
      { idleBelowPercent: 5, paused: false, size: 1 },
      'late-initialised false, never rewritten',
    );
    assert.equal(ready(w)?.reason, 'Idle');
    assert.deepEqual(
      w.recorded.fleet.filter((event) => event.startsWith('paused')),
      ['paused Idle'],
    );
    // Neither the next reconciles nor a restart's first (the record is in status) resume it.
    for (let turn = 0; turn < 3; turn++) await w.reconciler.reconcile(AT);
    assert.equal(mutations(w, 'resume'), 0);
    assert.equal(mutations(w, 'pause'), 1, 'paused once');
  });

  test('a busy object, or one without samples, is looked at and never paused', async () => {
    const w = open();
    w.api.create('w', { idleBelowPercent: 5 });
    w.api.create('quiet', { idleBelowPercent: 5 });
    await w.settle(KEY);
    await w.settle('ns-a/quiet');
    const busy = objectOf(w);
    const quiet = w.cloud.objects.get(String(w.api.get('ns-a/quiet')?.status?.id));
    assert.ok(busy && quiet);
    // Busy before the window passes, so the check reads 50%; the quiet one has no samples at all.
    w.cloud.utilization.set(busy.id, 50);
    w.clock.advance(IDLE_WINDOW_MS);
    await untilIdleChecked(w, 1);
    const checked = () => w.cloud.calls.filter((call) => call.op === 'idle').map((call) => call.id);
    assert.ok(checked().includes(busy.id), 'the busy object was read');
    await until(
      async () => {
        await w.reconciler.reconcile({ namespace: 'ns-a', name: 'quiet' });
        return checked().includes(quiet.id);
      },
      'the quiet object read',
      5_000,
    );
    await w.settle(KEY);
    await w.settle('ns-a/quiet');
    assert.equal(busy.status, 'RUNNING');
    assert.equal(quiet.status, 'RUNNING');
    assert.equal(pausedBy(w), undefined);
    assert.equal(w.api.get('ns-a/quiet')?.status?.pausedBy, undefined);
    assert.equal(mutations(w, 'pause'), 0);
  });

  test('a resource that does not ask is never checked: no idle call, though it would be idle', async () => {
    const w = open();
    w.api.create('w', {});
    w.api.create('asks', { idleBelowPercent: 5 });
    await w.settle(KEY);
    await w.settle('ns-a/asks');
    const widget = objectOf(w);
    const asks = w.cloud.objects.get(String(w.api.get('ns-a/asks')?.status?.id));
    assert.ok(widget && asks);
    w.cloud.utilization.set(widget.id, 1);
    w.cloud.utilization.set(asks.id, 1);
    w.clock.advance(IDLE_WINDOW_MS);
    // The one that asks is checked (and paused): the window passed, the schedule had its turns.
    await until(
      async () => {
        await w.reconciler.reconcile({ namespace: 'ns-a', name: 'asks' });
        await w.reconciler.reconcile(AT);
        return w.cloud.calls.some((call) => call.op === 'idle' && call.id === asks.id);
      },
      'the resource that asks checked',
      5_000,
    );
    await w.settle(KEY);
    assert.deepEqual(
      w.cloud.calls.filter((call) => call.op === 'idle' && call.id === widget.id),
      [],
      'never checked',
    );
    assert.equal(widget.status, 'RUNNING');
  });

  test('resumes when its user sets the resume annotation, or changes the spec', async () => {
    const w = open();
    w.api.create('w', { idleBelowPercent: 5 });
    await w.settle(KEY);
    const widget = objectOf(w);
    assert.ok(widget);
    w.clock.advance(IDLE_WINDOW_MS);
    w.cloud.utilization.set(widget.id, 1);
    await untilIdleChecked(w, 1);
    await w.settle(KEY);
    assert.equal(widget.status, 'PAUSED');
    w.api.annotate(KEY, { [RESUME]: '2026-11-26T10:00:00Z' });
    await w.settle(KEY);
    assert.equal(widget.status, 'RUNNING');
    assert.equal(pausedBy(w), undefined);
    assert.ok(w.reasonsOf(KEY).includes('Resumed'));
    // Its samples from before the pause still read idle, but say nothing of this run: no check, no
    // pause, until it has been up for a whole window again.
    await new Promise((resolve) => setTimeout(resolve, 600));
    await w.settle(KEY);
    assert.equal(mutations(w, 'idle'), 1, 'not looked at again within a window of the resume');
    assert.equal(widget.status, 'RUNNING', 'not paused again at once');

    w.clock.advance(IDLE_WINDOW_MS);
    await untilIdleChecked(w, 2);
    await w.settle(KEY);
    assert.equal(widget.status, 'PAUSED', 'idle again: paused again');
    assert.equal(pausedBy(w)?.resumeToken, '2026-11-26T10:00:00Z', 'the value it was paused under');
    w.cloud.utilization.delete(widget.id);
    w.api.patchSpec(KEY, { size: 1 });
    await w.settle(KEY);
    assert.equal(widget.status, 'RUNNING', 'a new generation resumes it');
    assert.equal(pausedBy(w), undefined);
  });
});

describe('a deadline', () => {
  test('with Pause holds the object paused once it passes, and a raised deadline resumes it', async () => {
    const w = open();
    w.api.create('w', { deadlineSeconds: 60 });
    await w.settle(KEY);
    const widget = objectOf(w);
    assert.ok(widget);
    const result = await w.reconciler.reconcile(AT);
    assert.ok(
      result.requeueAfterMs !== undefined &&
        result.requeueAfterMs <= 60_000 &&
        result.requeueAfterMs > 58_000,
      `looked at again when it passes: ${JSON.stringify(result)}`,
    );
    assert.equal(conditionOf(w.api.get(KEY), 'DeadlineExceeded')?.status, 'False');
    assert.equal(w.api.get(KEY)?.status?.startTime, new Date(widget.createdAt).toISOString());
    w.clock.advance(60_000);
    await w.settle(KEY);
    assert.equal(widget.status, 'PAUSED');
    assert.equal(pausedBy(w)?.reason, 'DeadlineExceeded');
    assert.equal(conditionOf(w.api.get(KEY), 'DeadlineExceeded')?.status, 'True');
    assert.ok(w.recorded.fleet.includes('deadline Pause'));
    // The resume annotation alone does not lift a deadline that still passed: it pauses again.
    w.api.patchSpec(KEY, { deadlineSeconds: 3_600 });
    await w.settle(KEY);
    assert.equal(widget.status, 'RUNNING');
    assert.equal(pausedBy(w), undefined);
    assert.equal(conditionOf(w.api.get(KEY), 'DeadlineExceeded')?.status, 'False');
  });

  test('with Delete deletes the object and finishes the resource: it is never created again', async () => {
    const w = open();
    w.api.create('w', { deadlineSeconds: 30, deadlineAction: 'Delete' });
    await w.settle(KEY);
    const widget = objectOf(w);
    assert.ok(widget);
    w.clock.advance(30_000);
    await w.settle(KEY);
    assert.equal(widget.status, 'TERMINATED');
    assert.equal(conditionOf(w.api.get(KEY), 'Failed')?.reason, 'DeadlineExceeded');
    assert.equal(ready(w)?.reason, 'DeadlineExceeded');
    await w.settle(KEY);
    assert.equal(mutations(w, 'create'), 1, 'not made again');
    assert.ok(w.recorded.fleet.includes('deadline Delete'));
  });

  test('counts from the first object: a replacement after preemption does not restart it', async () => {
    const w = open();
    w.api.create('w', { spot: true, recoveryPolicy: 'Recreate', deadlineSeconds: 600 });
    await w.settle(KEY);
    const first = objectOf(w);
    assert.ok(first);
    const startTime = w.api.get(KEY)?.status?.startTime;
    first.status = 'FAILED';
    await w.settle(KEY, 3);
    w.clock.advance(300_000);
    await w.settle(KEY);
    const second = objectOf(w);
    assert.ok(second && second.id !== first.id, 'replaced');
    assert.equal(w.api.get(KEY)?.status?.startTime, startTime);
    w.clock.advance(300_000);
    await w.settle(KEY);
    assert.equal(second.status, 'PAUSED', '600 s after the first object, not the second');
  });
});

describe('a kind without deadlines', () => {
  test('records no start time, whatever its objects say of when they were made', async () => {
    const w = open();
    const base = w.cloud.kind.bind(w.cloud);
    // As an endpoint: no deadline, and no creation time the cloud reports.
    w.cloud.kind = (org, name) => {
      const { deadline: _none, ...kind } = base(org, name);
      return { ...kind, createdAtOf: () => Number.POSITIVE_INFINITY };
    };
    w.api.create('w', {});
    const { errors } = await w.settle(KEY);
    assert.deepEqual(errors, []);
    assert.equal(ready(w)?.reason, 'Running');
    assert.equal(w.api.get(KEY)?.status?.startTime, undefined);
  });
});

describe('a budget that pauses pods when it is exceeded', () => {
  /** A world whose account has one budget that pauses pods, of `limit.perHour` (100 until a test moves it). */
  function openBudgeted() {
    const limit = { perHour: 100 };
    const budget: BudgetLimit = {
      name: 'team',
      limit: () => ({ perHour: limit.perHour, by: 'maxSpendPerHour' }),
      accountWide: true,
      covers: () => true,
      pausesPods: true,
    };
    world = widgetWorld({ policy: { budgets: [budget] } });
    return { w: world, limit };
  }

  /** Reconciles `keys` a few turns: prices are read in the background, so the spend is known after some. */
  async function priced(w: WidgetWorld, keys: string[]): Promise<void> {
    for (let turn = 0; turn < 4; turn++) {
      for (const key of keys) await w.settle(key, 3);
      await new Promise((resolve) => setImmediate(resolve));
    }
  }

  test('pauses just enough of the pods that allow it, the idlest first, and each once', async () => {
    const { w, limit } = openBudgeted();
    // Three widgets at 2 per hour each: two let a budget pause them, the third does not.
    w.api.create('busy', { pauseOnBudget: true });
    w.api.create('idle', { pauseOnBudget: true });
    w.api.create('kept', {});
    const keys = ['ns-a/busy', 'ns-a/idle', 'ns-a/kept'];
    for (const key of keys) await w.settle(key);
    const widget = (key: string) => w.cloud.objects.get(String(w.api.get(key)?.status?.id));
    w.cloud.utilization.set(String(widget('ns-a/busy')?.id), 60);
    w.cloud.utilization.set(String(widget('ns-a/idle')?.id), 3);
    await priced(w, keys);
    assert.equal(mutations(w, 'pause'), 0, 'within its limit: nothing paused');

    limit.perHour = 4.5; // 6 per hour now: 1.5 too much, one pod's 2 covers it.
    await priced(w, keys);
    assert.equal(widget('ns-a/idle')?.status, 'PAUSED', 'the idlest first');
    assert.equal(w.api.get('ns-a/idle')?.status?.pausedBy?.reason, 'BudgetExceeded');
    assert.equal(widget('ns-a/busy')?.status, 'RUNNING', 'no more than it takes');
    assert.equal(widget('ns-a/kept')?.status, 'RUNNING');

    limit.perHour = 1; // 4 per hour left: the busy one goes too; the one that does not allow it stays.
    await priced(w, keys);
    assert.equal(widget('ns-a/busy')?.status, 'PAUSED');
    assert.equal(widget('ns-a/kept')?.status, 'RUNNING', 'never paused: it does not allow it');
    assert.equal(mutations(w, 'pause'), 2, 'each paused once');
    assert.equal(mutations(w, 'resume'), 0);
  });

  test('resumed by its user while the budget is still over: paused again under the new word, said once, and the status names that pause', async () => {
    const { w, limit } = openBudgeted();
    w.api.create('w', { pauseOnBudget: true });
    await priced(w, [KEY]);
    limit.perHour = 1;
    await priced(w, [KEY]);
    assert.equal(objectOf(w)?.status, 'PAUSED');
    const first = pausedBy(w);
    assert.equal(first?.reason, 'BudgetExceeded');

    w.api.annotate(KEY, { [RESUME]: '2026-11-28T10:00:00Z' });
    for (let turn = 0; turn < 5; turn++) await w.settle(KEY, 3);
    assert.equal(objectOf(w)?.status, 'PAUSED', 'not resumed: the budget is still over');
    const again = pausedBy(w);
    assert.equal(again?.reason, 'BudgetExceeded');
    assert.equal(again?.resumeToken, '2026-11-28T10:00:00Z', 'the pause that holds it now is a new one');
    assert.match(again?.message ?? '', /its user resumed it while it still is/);
    assert.deepEqual(
      w.reasonsOf(KEY).filter((reason) => reason === 'Resumed'),
      [],
      'nothing resumed',
    );
    assert.deepEqual(
      w.reasonsOf(KEY).filter((reason) => reason === 'BudgetExceeded'),
      ['BudgetExceeded', 'BudgetExceeded'],
      'the first pause, and the second once: not on every retry',
    );
    assert.equal(mutations(w, 'resume'), 0);

    // The budget raised: the operator's pause still holds until its user lifts it, then it resumes.
    limit.perHour = 100;
    await priced(w, [KEY]);
    assert.equal(objectOf(w)?.status, 'PAUSED');
    w.api.annotate(KEY, { [RESUME]: '2026-11-28T11:00:00Z' });
    await priced(w, [KEY]);
    assert.equal(objectOf(w)?.status, 'RUNNING');
    assert.equal(pausedBy(w), undefined);
    assert.deepEqual(
      w.reasonsOf(KEY).filter((reason) => reason === 'Resumed'),
      ['Resumed'],
    );
  });

  test('a pod its deadline pauses as the budget goes over is paused once, for its deadline', async () => {
    const { w, limit } = openBudgeted();
    w.api.create('w', { pauseOnBudget: true, deadlineSeconds: 600 });
    await priced(w, [KEY]);
    assert.equal(objectOf(w)?.status, 'RUNNING');
    limit.perHour = 1;
    w.clock.advance(600_000);
    await w.settle(KEY);
    assert.equal(objectOf(w)?.status, 'PAUSED');
    assert.equal(pausedBy(w)?.reason, 'DeadlineExceeded');
    assert.deepEqual(
      w.recorded.fleet.filter((event) => event.startsWith('paused')),
      ['paused DeadlineExceeded'],
    );
  });
});

describe('what the operator took holds though a write is lost', () => {
  test("a Delete deadline's finish, erased by a stale write, is worked out again: never a second object", async () => {
    const w = open();
    w.api.create('w', { deadlineSeconds: 30, deadlineAction: 'Delete' });
    await w.settle(KEY);
    const before = w.api.get(KEY)?.status;
    w.clock.advance(30_000);
    await w.settle(KEY);
    assert.equal(conditionOf(w.api.get(KEY), 'Failed')?.reason, 'DeadlineExceeded');
    // A reconcile from a copy read before the finish rewrites the status whole, as it then stood.
    w.api.setStatus(KEY, { ...before });
    await w.settle(KEY);
    assert.equal(conditionOf(w.api.get(KEY), 'Failed')?.reason, 'DeadlineExceeded');
    assert.equal(mutations(w, 'create'), 1, 'not made again');
    // Nor when the id is let go too.
    w.api.setStatus(KEY, { startTime: before?.startTime });
    w.api.annotate(KEY, { 'gpucloud.io/external-id': null });
    await w.settle(KEY);
    assert.equal(mutations(w, 'create'), 1);
    assert.equal(conditionOf(w.api.get(KEY), 'Failed')?.reason, 'DeadlineExceeded');
  });

  test('a pause sent, then its status lost to a failure report, is not undone by the next reconcile', async () => {
    const w = open();
    const base = w.cloud.kind.bind(w.cloud);
    // The pause lands, then the call fails (a timeout): the failure is reported from the copy read before.
    let failPause = true;
    w.cloud.kind = (org, name) => {
      const kind = base(org, name);
      return {
        ...kind,
        plan: async (mr, widget, ctx) => {
          const plan = await kind.plan(mr, widget, ctx);
          if (plan.kind !== 'act' || plan.step.reason !== 'Pausing' || !failPause) return plan;
          const { step } = plan;
          return {
            kind: 'act',
            step: {
              ...step,
              run: async () => {
                await step.run();
                failPause = false;
                throw new Error('the pause timed out');
              },
            },
          };
        },
      };
    };
    // Idle: unlike a deadline, nothing works it out again once the pod is paused.
    w.api.create('w', { idleBelowPercent: 5 });
    await w.settle(KEY);
    const widget = objectOf(w);
    assert.ok(widget);
    w.clock.advance(IDLE_WINDOW_MS);
    w.cloud.utilization.set(widget.id, 1);
    await until(
      async () => {
        await w.reconciler.reconcile(AT).catch(() => undefined);
        return widget.status === 'PAUSED';
      },
      'paused, its call failing',
      5_000,
    );
    await w.settle(KEY);
    // Recorded again, and read: as an informer delivers the pause's write before the failure report's.
    assert.equal(pausedBy(w)?.reason, 'Idle');
    await w.reconciler.reconcile(AT);
    w.api.setStatus(KEY, { ...w.api.get(KEY)?.status, pausedBy: undefined });
    await w.settle(KEY);
    assert.equal(widget.status, 'PAUSED');
    assert.equal(mutations(w, 'resume'), 0, 'never resumed');
    assert.equal(pausedBy(w)?.reason, 'Idle', 'recorded again');
  });
});
