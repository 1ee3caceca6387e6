import assert from 'node:assert/strict';
import { afterEach, describe, test } from 'node:test';
import { EXTERNAL_ID } from '../../src/managed/core/annotations.ts';
import { ReconcileError } from '../../src/managed/core/errors.ts';
import { captureLogs } from '../support/log-capture.ts';
import { conditionOf } from './fakes.ts';
import { type WidgetWorld, widgetWorld } from './world.ts';

// A failed reconcile as the user sees it: a Warning event and Synced=False with the failure's reason,
// Secret values scrubbed, terminal failures not retried; a conflict looked at again, a deposed leader
// silent. On the fakes.

const KEY = 'ns-a/w';
let worlds: WidgetWorld[] = [];

afterEach(async () => {
  for (const w of worlds) await w.close();
  worlds = [];
});

function open(options?: Parameters<typeof widgetWorld>[0]): WidgetWorld {
  const w = widgetWorld(options);
  worlds.push(w);
  return w;
}

const synced = (w: WidgetWorld, key = KEY) => conditionOf(w.api.get(key), 'Synced');
const creates = (w: WidgetWorld) => w.cloud.calls.filter((call) => call.op === 'create').length;

async function rejection(run: Promise<unknown>): Promise<Error> {
  try {
    await run;
  } catch (error) {
    assert.ok(error instanceof Error);
    return error;
  }
  assert.fail('expected the reconcile to fail');
}

describe('failures', () => {
  test('a transient failure is reported, thrown for backoff, and retried', async () => {
    const w = open();
    w.api.create('w', {});
    w.cloud.failNextCreate = new ReconcileError('CloudUnavailable', 'the cloud is busy', { terminal: false });
    const error = await rejection(w.reconcile(KEY));
    assert.equal(error.name, 'ReconcileError');
    assert.equal((error as ReconcileError).reason, 'CloudUnavailable');
    const condition = synced(w);
    assert.deepEqual(
      [condition?.status, condition?.reason, condition?.message],
      ['False', 'CloudUnavailable', 'the cloud is busy'],
    );
    assert.deepEqual(
      w.eventsOf(KEY).map((event) => [event.type, event.reason, event.message]),
      [['Warning', 'CloudUnavailable', 'the cloud is busy']],
    );
    assert.deepEqual(w.recorded.fleet, []);
    await w.settle(KEY);
    assert.equal(creates(w), 2, 'asked again');
    assert.equal(synced(w)?.status, 'True');
  });

  test('a wait no retry shortens (a limit of the account) is looked at again steadily, not thrown for backoff', async () => {
    const w = open();
    w.api.create('w', {});
    w.cloud.failNextCreate = new ReconcileError('BudgetExceeded', 'over the budget', {
      terminal: false,
      retryAfterMs: 10_000,
    });
    assert.deepEqual(await w.reconcile(KEY), { requeueAfterMs: 10_000 });
    assert.equal(synced(w)?.reason, 'BudgetExceeded');
    assert.deepEqual(
      w.eventsOf(KEY).map((event) => event.reason),
      ['BudgetExceeded'],
    );
  });

  test('a terminal failure is reported, counted, and not retried until the resource changes', async () => {
    const w = open();
    w.api.create('w', {});
    w.cloud.failNextCreate = new ReconcileError('CloudRejected', 'no such widget type', { terminal: true });
    const error = await rejection(w.reconcile(KEY));
    assert.equal(error.name, 'TerminalError');
    assert.equal(error.message, 'no such widget type');
    assert.equal((error.cause as ReconcileError).reason, 'CloudRejected');
    assert.equal(synced(w)?.reason, 'CloudRejected');
    assert.deepEqual(w.recorded.fleet, ['refused CloudRejected']);
    assert.deepEqual(await w.reconcile(KEY), {});
    assert.equal(creates(w), 1, 'not asked again');
    w.api.patchSpec(KEY, { size: 2 });
    await w.settle(KEY);
    assert.equal(creates(w), 2, 'a change is tried again');
    assert.equal(synced(w)?.status, 'True');
  });

  test('Secret values the reconcile revealed are scrubbed from what the failure says', async () => {
    const w = open({
      adapt: (base) => ({
        ...base,
        create: async (_mr, ctx) => {
          const [env] = await ctx.resolveEnv([
            { key: 'TOKEN', valueFrom: { secretKeyRef: { name: 'creds', key: 'token' } } },
          ]);
          throw new ReconcileError('CloudRejected', `bad env TOKEN=${env?.value}`, { terminal: true });
        },
      }),
    });
    w.api.secrets.set('ns-a/creds', { data: { token: 's3cr3t-value' } });
    w.api.create('w', {});
    const error = await rejection(w.reconcile(KEY));
    assert.equal(error.message, 'bad env TOKEN=[redacted]');
    assert.equal(synced(w)?.message, 'bad env TOKEN=[redacted]');
    assert.deepEqual(
      w.eventsOf(KEY).map((event) => event.message),
      ['bad env TOKEN=[redacted]'],
    );
    assert.ok(!JSON.stringify(w.api.get(KEY)).includes('s3cr3t-value'));
  });

  test('a failure whose status cannot be written is still thrown as itself', async () => {
    const w = open({
      writer: (base) => ({
        ...base,
        patchStatus: async () => {
          throw new Error('apiserver down');
        },
      }),
    });
    w.api.create('w', {});
    w.cloud.failNextCreate = new ReconcileError('CloudUnavailable', 'the cloud is busy', { terminal: false });
    const error = await rejection(w.reconcile(KEY));
    assert.equal((error as ReconcileError).reason, 'CloudUnavailable');
    assert.deepEqual(
      w.eventsOf(KEY).map((event) => event.reason),
      ['CloudUnavailable'],
    );
  });

  test('a failure that repeats is not written again', async () => {
    const w = open();
    w.api.create('w', {}, { annotations: { [EXTERNAL_ID]: '4242' } });
    w.api.setStatus(KEY, { note: 'kept' });
    await rejection(w.reconcile(KEY));
    const writes = w.api.writes.length;
    w.api.patchSpec(KEY, { size: 3 });
    await rejection(w.reconcile(KEY));
    assert.equal(w.api.get(KEY)?.status?.note, 'kept', 'the rest of the status stands');
    assert.equal(w.api.get(KEY)?.status?.observedGeneration, 2);
    assert.equal(w.api.writes.length, writes + 1);
  });
});

describe("the operator's log", () => {
  test('a failure is logged as a warning with its reason and the error that caused it', async () => {
    const logs = captureLogs();
    const w = open({ log: logs.logger });
    w.api.create('w', {});
    w.cloud.failNextCreate = new ReconcileError('CloudUnavailable', 'the cloud is busy', {
      terminal: false,
      cause: new Error('socket hang up'),
    });
    await rejection(w.reconcile(KEY));
    const line = logs.lines.find((entry) => entry.msg === 'the cloud is busy');
    assert.ok(line, 'logged');
    assert.equal(line.level, 'warn');
    assert.equal(line.resource, KEY);
    assert.equal(line.reason, 'CloudUnavailable');
    assert.equal(line.terminal, false);
    assert.equal((line.err as { message?: string }).message, 'socket hang up');
  });

  test('the same failure again is logged at info level: a resource that keeps waiting is no new warning', async () => {
    const logs = captureLogs();
    const w = open({ log: logs.logger });
    w.api.create('w', {});
    const busy = () =>
      new ReconcileError('CloudUnavailable', 'the cloud is busy', { terminal: false, retryAfterMs: 1_000 });
    w.cloud.failNextCreate = busy();
    await w.reconcile(KEY);
    w.cloud.failNextCreate = busy();
    await w.reconcile(KEY);
    w.cloud.failNextCreate = new ReconcileError('CloudUnavailable', 'the cloud is busier', {
      terminal: false,
      retryAfterMs: 1_000,
    });
    await w.reconcile(KEY);
    assert.deepEqual(
      logs.lines
        .filter((entry) => String(entry.msg).startsWith('the cloud is bus'))
        .map((entry) => `${entry.level} ${entry.msg}`),
      ['warn the cloud is busy', 'info the cloud is busy', 'warn the cloud is busier'],
    );
  });

  test('a failure with no cause is logged with itself as the error', async () => {
    const logs = captureLogs();
    const w = open({ log: logs.logger });
    w.api.create('w', {});
    w.cloud.failNextCreate = new ReconcileError('CloudRejected', 'no such type', { terminal: true });
    await rejection(w.reconcile(KEY));
    const line = logs.lines.find((entry) => entry.msg === 'no such type');
    assert.ok(line, 'logged');
    assert.equal(line.terminal, true);
    assert.equal((line.err as { message?: string }).message, 'no such type');
  });

  test('a failure that cannot be recorded in status says so in the log', async () => {
    const logs = captureLogs();
    const w = open({
      log: logs.logger,
      writer: (base) => ({
        ...base,
        patchStatus: async () => {
          throw new Error('apiserver down');
        },
      }),
    });
    w.api.create('w', {});
    w.cloud.failNextCreate = new ReconcileError('CloudUnavailable', 'the cloud is busy', { terminal: false });
    await rejection(w.reconcile(KEY));
    const line = logs.lines.find((entry) => entry.msg === 'could not record the failure in status');
    assert.ok(line, 'logged');
    assert.equal(line.level, 'warn');
    assert.equal(line.resource, KEY);
    assert.equal((line.err as { message?: string }).message, 'apiserver down');
  });

  test('a deposed leader logs why it left the resource alone', async () => {
    const logs = captureLogs();
    const w = open({ log: logs.logger });
    w.api.create('w', {});
    w.state.leader = false;
    await w.reconcile(KEY);
    assert.ok(
      logs.lines.some((entry) => entry.resource === KEY && String(entry.msg).includes('leader lease')),
    );
  });
});

describe('what is not a failure', () => {
  test('a conflict (someone wrote the resource since it was read) is looked at again, silently', async () => {
    const w = open();
    const outside = w.cloud.put({ name: 'o', size: 4 });
    w.api.create('w', {}, { annotations: { [EXTERNAL_ID]: outside.id } });
    let once = true;
    w.api.beforePatch = (key) => {
      if (!once) return;
      once = false;
      w.api.annotate(key, { note: 'another writer' });
    };
    assert.deepEqual(await w.reconcile(KEY), { requeue: true });
    assert.deepEqual(w.eventsOf(KEY), []);
    assert.equal(w.api.get(KEY)?.status, undefined, 'no status written');
    await w.settle(KEY);
    assert.equal(synced(w)?.status, 'True');
  });

  test('a deposed leader writes nothing, says nothing and asks for nothing', async () => {
    const w = open();
    w.api.create('w', {});
    w.state.leader = false;
    assert.deepEqual(await w.reconcile(KEY), {});
    assert.deepEqual(await w.reconcile(KEY), {});
    assert.deepEqual(
      w.api.writes.filter((write) => write.what === 'status'),
      [],
    );
    assert.equal(w.api.get(KEY)?.status, undefined);
    assert.deepEqual(w.eventsOf(KEY), []);
    assert.deepEqual(w.recorded.fleet, []);
    assert.equal(creates(w), 0);
  });
});
