import assert from 'node:assert/strict';
import { afterEach, describe, test } from 'node:test';
import type { AccountLink } from '../../src/managed/accounts/account-links.ts';
import { RESUME } from '../../src/managed/core/annotations.ts';
import { keyOf, type ManagedObject } from '../../src/managed/core/external-kind.ts';
import type { Condition, ManagedStatus, PausedBy } from '../../src/managed/core/status-schema.ts';
import { OperatorPause } from '../../src/managed/lifecycle/operator-pause.ts';
import { captureLogs } from '../support/log-capture.ts';
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

// The operator's pause one decision at a time, on the real account link of the fake widget kind and a
// clock that stands still: exactly when a deadline passes, when the idle check is spent, what is said
// (events, fleet counts, log lines) and what the process remembers. The stories through the whole
// reconciler are in operator-pause.test.ts.

const KEY = 'ns-a/w';
/** The fake kind's idle window: 30 minutes. */
const WINDOW_MS = 30 * 60_000;
const SAYS_HOW_TO_RESUME = `it resumes when its user changes the spec or sets annotation ${RESUME} (gpucloud resume)`;
const iso = (ms: number) => new Date(ms).toISOString();

const opened: WidgetWorld[] = [];
afterEach(async () => {
  for (const world of opened.splice(0)) await world.close();
});

/** An OperatorPause of the widget kind (as `change` makes it) and its account link, recording what it says. */
function open(change?: (kind: Kind) => Kind) {
  const world = widgetWorld({ adapt: change, still: true });
  opened.push(world);
  const { clock, cloud, link, woken, events, recorded } = world;
  const logs = captureLogs('info');
  const pause = new OperatorPause<WidgetSpec, Widget>({
    kind: 'Widget',
    events,
    fleet: {
      pausedByOperator: (reason) => void recorded.fleet.push(`paused ${reason}`),
      deadlineExceeded: (action) => void recorded.fleet.push(`deadline ${action}`),
    },
    clock,
    log: logs.logger,
    store: world.api.store,
    parseSpec: parseWidgetSpec,
  });
  let ticking = false;
  /** The log lines at `level`, with the fields the operator reads. */
  const lines = (level: 'info' | 'warn') =>
    logs.lines
      .filter((line) => line.level === level)
      .map(({ resource, reason, msg, err }) => ({
        resource,
        msg,
        ...(reason !== undefined && { reason }),
        ...(err !== undefined && { err: (err as { message: string }).message }),
      }));
  return {
    clock,
    cloud,
    pause,
    link,
    recorded,
    woken,
    /** One decision, and its status write landed: what it says once the write lands is said. */
    decide: async (
      mr: ManagedObject<WidgetSpec>,
      widget: Widget,
      on: AccountLink<WidgetSpec, Widget> = link,
    ) => {
      const decision = await pause.decide(mr, widget, on);
      decision.resumed?.();
      return decision;
    },
    /** One decision whose status write never lands (a stale copy's turn). */
    decideRefused: (mr: ManagedObject<WidgetSpec>, widget: Widget) => pause.decide(mr, widget, link),
    warnings: () => lines('warn'),
    infos: () => lines('info'),
    checks: () => cloud.calls.filter((call) => call.op === 'idle').length,
    /** Lets the idle schedule run, with a second of its budget, until `keys` have their turn. */
    async turnOf(...keys: string[]): Promise<void> {
      if (!ticking) link.idle?.start();
      ticking = true;
      clock.advance(1_000);
      await until(() => keys.every((each) => link.idle?.isDue(each) === true), `the turns of ${keys}`, 5_000);
    },
  };
}

function resource(
  spec: WidgetSpec,
  more: {
    name?: string;
    generation?: number;
    annotations?: Record<string, string>;
    status?: ManagedStatus;
  } = {},
): ManagedObject<WidgetSpec> {
  const name = more.name ?? 'w';
  return {
    apiVersion: 'test.gpucloud.io/v1',
    kind: 'Widget',
    metadata: {
      namespace: 'ns-a',
      name,
      uid: `uid-${name}`,
      generation: more.generation ?? 1,
      resourceVersion: '1',
      ...(more.annotations && { annotations: more.annotations }),
    },
    spec,
    ...(more.status && { status: more.status }),
  };
}

const condition = (type: string, status: Condition['status'], since: number): Condition => ({
  type,
  status,
  lastTransitionTime: iso(since),
  reason: status === 'True' ? 'Running' : 'NotRunning',
  message: '',
});

/** A resource that asks to be paused when idle, Ready since `since`. */
const idleAsked = (since: number, more: Parameters<typeof resource>[1] = {}) =>
  resource(
    { idleBelowPercent: 5 },
    { ...more, status: { ...more.status, conditions: [condition('Ready', 'True', since)] } },
  );

describe('a deadline', () => {
  test('counts from the creation of the object until a status records it, and pauses at its very second, once', async () => {
    const t = open();
    const now = t.clock.now();
    const widget = t.cloud.put({ name: 'w', createdAt: now - 59_000 });
    const spec = { deadlineSeconds: 60 };
    // A first reconcile: no status at all yet.
    assert.deepEqual(await t.decide(resource(spec), widget), {
      pausedBy: undefined,
      startTime: iso(now - 59_000),
      deadline: { seconds: 60, action: 'Pause', at: now + 1_000, passed: false },
      revisitAfterMs: undefined,
    });
    assert.equal(t.recorded.events.length, 0);

    t.clock.advance(1_000);
    const passed = await t.decide(resource(spec), widget);
    const message = `paused by the operator: its activeDeadlineSeconds (60 s) passed at ${iso(now + 1_000)}; ${SAYS_HOW_TO_RESUME}`;
    assert.deepEqual(passed.pausedBy, {
      reason: 'DeadlineExceeded',
      message,
      since: iso(now + 1_000),
      generation: 1,
      resumeToken: undefined,
    });
    assert.deepEqual(t.recorded.events, [{ key: KEY, type: 'Warning', reason: 'DeadlineExceeded', message }]);
    assert.deepEqual(t.recorded.fleet, ['paused DeadlineExceeded', 'deadline Pause']);
    assert.deepEqual(t.warnings(), [{ resource: KEY, reason: 'DeadlineExceeded', msg: message }]);

    // Recorded in status, it holds as it was taken: neither taken nor said again.
    t.clock.advance(5_000);
    const status = { startTime: iso(now - 59_000), pausedBy: passed.pausedBy };
    const held = await t.decide(resource(spec, { status }), widget);
    assert.deepEqual(held.pausedBy, passed.pausedBy);
    assert.equal(held.startTime, status.startTime, "the status's start, not the object's");
    assert.equal(t.recorded.events.length, 1);
    assert.deepEqual(t.recorded.fleet, ['paused DeadlineExceeded', 'deadline Pause']);
  });

  test('waits for a creation time that reads: none from a time of 0, NaN or infinity', async () => {
    const t = open();
    for (const createdAt of [0, Number.NaN, Number.POSITIVE_INFINITY]) {
      const widget = t.cloud.put({ name: 'w', createdAt });
      const decision = await t.decide(resource({ deadlineSeconds: 60 }), widget);
      assert.equal(decision.startTime, undefined, `created at ${createdAt}`);
      assert.equal(decision.deadline, undefined, `created at ${createdAt}`);
    }
    assert.deepEqual(t.recorded.fleet, []);
  });

  test('that deletes is no pause; ended once the status has its start, and said as it deletes', async () => {
    const t = open();
    const now = t.clock.now();
    const widget = t.cloud.put({ name: 'w', createdAt: now - 30_000 });
    const spec = { deadlineSeconds: 30, deadlineAction: 'Delete' as const };
    const decision = await t.decide(resource(spec), widget);
    assert.equal(decision.pausedBy, undefined);
    assert.deepEqual(decision.deadline, { seconds: 30, action: 'Delete', at: now, passed: true });
    assert.deepEqual(t.recorded.fleet, []);

    assert.equal(t.pause.endedByDeadline(resource(spec), t.link), undefined, 'no start recorded yet');
    const status = { startTime: iso(now - 30_000) };
    assert.equal(
      t.pause.endedByDeadline(resource({ ...spec, deadlineSeconds: 31 }, { status }), t.link),
      undefined,
      'not passed yet',
    );
    assert.equal(
      t.pause.endedByDeadline(resource({ deadlineSeconds: 30 }, { status }), t.link),
      undefined,
      'a deadline that pauses ends nothing',
    );
    const ended = t.pause.endedByDeadline(resource(spec, { status }), t.link);
    assert.deepEqual(ended, decision.deadline);

    assert.ok(ended);
    const message = `its activeDeadlineSeconds (30 s) passed at ${iso(now)}: deleting the cloud Widget, which is not made again`;
    assert.equal(t.pause.deleting(resource(spec, { status }), ended), message);
    assert.deepEqual(t.recorded.events, [{ key: KEY, type: 'Warning', reason: 'DeadlineExceeded', message }]);
    assert.deepEqual(t.recorded.fleet, ['deadline Delete']);
    assert.deepEqual(t.warnings(), [{ resource: KEY, msg: message }]);
  });

  test('on a kind without deadlines, or a spec without one: no start, no deadline, nothing ended', async () => {
    const t = open(({ deadline: _none, ...kind }) => kind);
    const status = { startTime: iso(t.clock.now() - 120_000) };
    const widget = t.cloud.put({ name: 'w', createdAt: t.clock.now() - 120_000 });
    const spec = { deadlineSeconds: 60, deadlineAction: 'Delete' as const };
    const decision = await t.decide(resource(spec), widget);
    assert.equal(decision.startTime, undefined);
    assert.equal(decision.deadline, undefined);
    assert.equal(t.pause.endedByDeadline(resource(spec, { status }), t.link), undefined);
    const other = open();
    assert.equal(
      other.pause.endedByDeadline(resource({}, { status }), other.link),
      undefined,
      'no deadline asked',
    );
  });

  test('on a kind that cannot pause, pauses nothing', async () => {
    const t = open(cannotPause);
    const widget = t.cloud.put({ name: 'w', createdAt: t.clock.now() - 60_000 });
    const decision = await t.decide(resource({ deadlineSeconds: 60, idleBelowPercent: 5 }), widget);
    assert.equal(decision.deadline?.passed, true);
    assert.equal(decision.pausedBy, undefined);
    assert.deepEqual(t.recorded.fleet, []);
  });

  test('on a kind that pauses without idle checks, pauses with no idle schedule to untrack', async () => {
    const t = open(pausesOnlyAtDeadlines);
    assert.equal(t.link.idle, undefined);
    const widget = t.cloud.put({ name: 'w', createdAt: t.clock.now() - 59_000 });
    const spec = { deadlineSeconds: 60, idleBelowPercent: 5 };
    assert.equal((await t.decide(resource(spec), widget)).pausedBy, undefined);
    t.clock.advance(1_000);
    assert.equal((await t.decide(resource(spec), widget)).pausedBy?.reason, 'DeadlineExceeded');
    assert.equal(t.checks(), 0);
  });
});

describe('idle', () => {
  test('an object Ready for exactly its window is checked on its turn, once, and paused', async () => {
    const t = open();
    const widget = t.cloud.put({ name: 'w' });
    t.cloud.utilization.set(widget.id, 2);
    const first = await t.decide(idleAsked(t.clock.now() - 2 * WINDOW_MS), widget);
    assert.equal(first.pausedBy, undefined);
    assert.equal(t.checks(), 0, 'not its turn yet');

    await t.turnOf(KEY);
    const now = t.clock.now();
    const decision = await t.decide(idleAsked(now - WINDOW_MS), widget);
    const message = `paused by the operator: at 2%; ${SAYS_HOW_TO_RESUME}`;
    assert.deepEqual(decision.pausedBy, {
      reason: 'Idle',
      message,
      since: iso(now),
      generation: 1,
      resumeToken: undefined,
    });
    assert.equal(t.checks(), 1);
    assert.equal(t.link.idle?.isDue(KEY), false, 'its turn is spent');
    assert.deepEqual(t.recorded.events, [{ key: KEY, type: 'Warning', reason: 'Idle', message }]);
    assert.deepEqual(t.recorded.fleet, ['paused Idle'], 'no deadline counted');
    assert.deepEqual(t.warnings(), [{ resource: KEY, reason: 'Idle', msg: message }]);
  });

  test('a check that fails is not idle: said in the log, and the turn is spent', async () => {
    const t = open((kind) => ({
      ...kind,
      pause: kind.pause && {
        ...kind.pause,
        idle: kind.pause.idle && {
          ...kind.pause.idle,
          check: async () => {
            throw new Error('metrics unavailable');
          },
        },
      },
    }));
    const widget = t.cloud.put({ name: 'w' });
    const mr = idleAsked(t.clock.now() - 2 * WINDOW_MS);
    await t.decide(mr, widget);
    await t.turnOf(KEY);
    assert.equal((await t.decide(mr, widget)).pausedBy, undefined);
    assert.equal(t.link.idle?.isDue(KEY), false);
    assert.deepEqual(t.warnings(), [
      { resource: KEY, msg: 'reading GPU utilisation failed; not idle', err: 'metrics unavailable' },
    ]);
  });

  test('only an object Ready for the whole window is checked; a turn it cannot use is spent all the same', async () => {
    const t = open();
    const widget = t.cloud.put({ name: 'w' });
    t.cloud.utilization.set(widget.id, 1);
    const longAgo = t.clock.now() - 2 * WINDOW_MS;
    const spec = { idleBelowPercent: 5 };
    const asOf = (now: number) => ({
      young: { conditions: [condition('Ready', 'True', now - WINDOW_MS + 1)] },
      unready: { conditions: [condition('Synced', 'True', longAgo), condition('Ready', 'False', longAgo)] },
      unsaid: { conditions: [condition('Synced', 'True', longAgo)] },
      bare: {},
      unknown: undefined,
    });
    const names = Object.keys(asOf(0));
    const mrs = (now: number) =>
      Object.entries(asOf(now)).map(([name, status]) => resource(spec, { name, ...(status && { status }) }));
    for (const mr of mrs(t.clock.now())) await t.decide(mr, widget);
    await t.turnOf(...names.map((name) => `ns-a/${name}`));
    for (const mr of mrs(t.clock.now())) {
      assert.equal((await t.decide(mr, widget)).pausedBy, undefined, mr.metadata.name);
      assert.equal(t.link.idle?.isDue(keyOf(mr)), false, `${mr.metadata.name}: its turn is spent`);
    }
    assert.equal(t.checks(), 0);
  });

  test('an object that stops running, or that the operator pauses, is untracked: its turns wake it no more', async () => {
    const t = open();
    const now = t.clock.now();
    const widget = (name: string) => t.cloud.put({ name, createdAt: now - 59_000 });
    const stopped = widget('stopped');
    const held = widget('held');
    const watched = widget('watched');
    const longAgo = now - 2 * WINDOW_MS;
    await t.decide(idleAsked(longAgo, { name: 'stopped' }), stopped);
    const heldMr = resource(
      { idleBelowPercent: 5, deadlineSeconds: 60 },
      { name: 'held', status: { conditions: [condition('Ready', 'True', longAgo)] } },
    );
    await t.decide(heldMr, held);
    await t.decide(idleAsked(longAgo, { name: 'watched' }), watched);

    await t.decide(idleAsked(longAgo, { name: 'stopped' }), { ...stopped, status: 'PAUSED' });
    t.clock.advance(1_000);
    assert.equal((await t.decide(heldMr, held)).pausedBy?.reason, 'DeadlineExceeded');
    await t.turnOf('ns-a/watched');
    assert.deepEqual(t.woken, ['ns-a/watched'], 'the others were tracked before it, and are not woken');
  });

  test('without an idle schedule on its link, nothing is checked', async () => {
    const t = open();
    const widget = t.cloud.put({ name: 'w' });
    t.cloud.utilization.set(widget.id, 1);
    const decision = await t.decide(idleAsked(t.clock.now() - 2 * WINDOW_MS), widget, {
      ...t.link,
      idle: undefined,
    });
    assert.equal(decision.pausedBy, undefined);
    assert.equal(t.checks(), 0);
  });
});

describe('what the operator took', () => {
  const recorded: PausedBy = {
    reason: 'Idle',
    message: `paused by the operator: at 1%; ${SAYS_HOW_TO_RESUME}`,
    since: '2026-11-26T10:00:00.000Z',
    generation: 1,
  };

  test('its user lifts: a new resume token or a new spec; said once, with what it was', async () => {
    const t = open();
    const widget = t.cloud.put({ name: 'w' });
    const status = { pausedBy: recorded };
    assert.deepEqual((await t.decide(resource({}, { status }), widget)).pausedBy, recorded, 'no annotations');
    assert.deepEqual(
      (await t.decide(resource({}, { status, annotations: { other: 'x' } }), widget)).pausedBy,
      recorded,
      'no resume token, as when it was paused',
    );
    assert.deepEqual(t.recorded.events, []);
    const refused = await t.decideRefused(resource({}, { status, annotations: { [RESUME]: 'now' } }), widget);
    assert.equal(refused.pausedBy, undefined);
    assert.deepEqual(t.recorded.events, [], 'a turn whose write does not land says nothing');

    const byToken = await t.decide(resource({}, { status, annotations: { [RESUME]: 'now' } }), widget);
    assert.equal(byToken.pausedBy, undefined);
    const bySpec = await t.decide(resource({}, { status, generation: 2 }), widget);
    assert.equal(bySpec.pausedBy, undefined);
    const said = [
      `resumed by its user (annotation ${RESUME}); it was paused: ${recorded.message}`,
      `resumed by its user (a new spec); it was paused: ${recorded.message}`,
    ];
    assert.deepEqual(
      t.recorded.events,
      said.map((message) => ({ key: KEY, type: 'Normal', reason: 'Resumed', message })),
    );
    assert.deepEqual(
      t.infos(),
      said.map((msg) => ({ resource: KEY, msg })),
    );
  });

  test('holds whatever the status says, until its user lifts it or the resource is let go', async () => {
    const t = open();
    const names = ['shown', 'lifted', 'released'];
    const widgets = new Map(names.map((name) => [name, t.cloud.put({ name })]));
    for (const widget of widgets.values()) t.cloud.utilization.set(widget.id, 1);
    const longAgo = t.clock.now() - 2 * WINDOW_MS;
    const decide = (name: string, more: Parameters<typeof resource>[1] = {}) =>
      t.decide(idleAsked(longAgo, { name, ...more }), widgets.get(name) as Widget);
    for (const name of names) await decide(name);
    await t.turnOf(...names.map((name) => `ns-a/${name}`));
    const taken = new Map<string, PausedBy | undefined>();
    for (const name of names) taken.set(name, (await decide(name)).pausedBy);
    assert.equal(t.checks(), 3);
    // A copy read before the status write: what was taken holds.
    for (const name of names) assert.deepEqual((await decide(name)).pausedBy, taken.get(name), name);

    // Shown in a status, then lost from it (a failure report's rewrite from an older copy, delivered after
    // the copy that showed it): it holds all the same.
    const pausedBy = taken.get('shown');
    assert.deepEqual((await decide('shown', { status: { pausedBy } })).pausedBy, pausedBy);
    assert.deepEqual((await decide('shown')).pausedBy, pausedBy, 'a status without it');

    // Lifted by a new spec before any status showed it: said once, not at every reconcile after.
    assert.equal((await decide('lifted', { generation: 2 })).pausedBy, undefined);
    assert.equal((await decide('lifted', { generation: 2 })).pausedBy, undefined);
    assert.deepEqual(
      t.recorded.events.filter((event) => event.reason === 'Resumed').map((event) => event.key),
      ['ns-a/lifted'],
    );

    // A resource let go: nothing of it is remembered.
    t.pause.forget('uid-released');
    assert.equal((await decide('released')).pausedBy, undefined);
    assert.equal(t.checks(), 3, 'no turn came since: nothing was checked again');
  });
});
