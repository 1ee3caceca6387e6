import assert from 'node:assert/strict';
import { afterEach, describe, test } from 'node:test';
import { CREATE_INTENT, CREATE_NAME, EXTERNAL_ID, FINALIZER } from '../../src/managed/core/annotations.ts';
import { sealIntent } from '../../src/managed/creation/creation.ts';
import { captureLogs } from '../support/log-capture.ts';
import { conditionOf, type Kind } from './fakes.ts';
import { type WidgetWorld, widgetWorld } from './world.ts';

// Which cloud object a resource is about: adoption, claims, re-pointing, a named object missing, and
// what creating or recovering one reports. On the fakes: no apiserver, no simulator.

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
const statusOf = (w: WidgetWorld, key = KEY) => w.api.get(key)?.status ?? {};
/** The create intent an operator writes before a create, dated `at`. */
function intent(uid: string, name: string, at: number) {
  return { [CREATE_INTENT]: `${at}.${sealIntent('signing-key', uid, at, name)}`, [CREATE_NAME]: name };
}
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('adoption', () => {
  test('an account that refuses adoption still lets a resource name the object it made', async () => {
    const w = open({ policy: { adoption: false } });
    w.api.create('w', {});
    await w.settle(KEY);
    const id = String(statusOf(w).id);
    assert.equal(w.api.get(KEY)?.metadata.annotations?.[EXTERNAL_ID], id);
    await w.settle(KEY);
    assert.equal(synced(w)?.status, 'True');
    assert.equal(synced(w)?.reason, 'ReconcileSuccess');
  });

  test('an account that refuses adoption lets a copy read before the status write name the id just recorded', async () => {
    const w = open({ policy: { adoption: false } });
    w.api.create('w', {});
    await w.settle(KEY);
    const id = String(statusOf(w).id);
    const obj = w.api.objects.get(KEY);
    assert.ok(obj);
    obj.status = undefined;
    await w.reconcile(KEY);
    assert.equal(synced(w)?.reason, 'ReconcileSuccess');
    assert.equal(statusOf(w).id, id);
  });

  test('an account that refuses adoption lets a resource name the id its status proves (a restart)', async () => {
    const w = open({ policy: { adoption: false } });
    const own = w.cloud.put({ name: 'w' });
    w.api.create('w', {}, { annotations: { [EXTERNAL_ID]: own.id } });
    w.api.setStatus(KEY, { id: own.id });
    await w.settle(KEY);
    assert.equal(synced(w)?.reason, 'ReconcileSuccess');
    assert.equal(statusOf(w).phase, 'RUNNING');
  });

  test('a refused adoption names the account and what to change, and never suggests a second object', async () => {
    const w = open({ policy: { adoption: false } });
    const outside = w.cloud.put({ name: 'x' });
    w.api.create('w', {}, { annotations: { [EXTERNAL_ID]: outside.id } });
    const { errors } = await w.settle(KEY, { expect: ['AdoptionNotAllowed'] });
    assert.equal(errors.at(-1)?.name, 'TerminalError');
    assert.equal(synced(w)?.reason, 'AdoptionNotAllowed');
    assert.equal(
      synced(w)?.message,
      `provider config default does not allow adopting existing cloud objects: ask its owner to set spec.adoption: Allowed, and this resource is looked at again as soon as the provider config changes (removing annotation ${EXTERNAL_ID} would not adopt ${outside.id}: it would create a second, separately billed object)`,
    );
  });

  test('a resource refused before it held a finalizer is forgotten when the informer says it is gone', async () => {
    const w = open({ policy: { adoption: false } });
    const outside = w.cloud.put({ name: 'x' });
    w.api.create('w', {}, { annotations: { [EXTERNAL_ID]: outside.id } });
    await w.settle(KEY, { expect: ['AdoptionNotAllowed'] });
    assert.deepEqual(w.reconciler.refusedOn('default'), [KEY]);
    assert.equal(w.api.get(KEY)?.metadata.finalizers, undefined, 'refused before its finalizer');
    const gone = w.api.vanish(KEY);
    w.reconciler.vanished(gone, true);
    assert.deepEqual(w.reconciler.refusedOn('default'), [], 'nothing of it is kept');
  });

  test('a refusal that rests on the account is looked at again when the account changes, and that change wakes it', async () => {
    const w = open({ policy: { adoption: false } });
    const woken: string[] = [];
    w.onAccountChange((account) => woken.push(...w.reconciler.refusedOn(account)));
    const outside = w.cloud.put({ name: 'x' });
    w.api.create('w', {}, { annotations: { [EXTERNAL_ID]: outside.id } });
    await w.settle(KEY, { expect: ['AdoptionNotAllowed'] });
    assert.equal(synced(w)?.reason, 'AdoptionNotAllowed');
    // Refused for good on this account as it is: a resync asks nothing.
    assert.deepEqual(await w.reconcile(KEY), {});
    assert.equal(synced(w)?.reason, 'AdoptionNotAllowed');
    w.changeAccount('default', { adoption: true });
    assert.deepEqual(woken, [KEY], 'the change wakes the resource it refused');
    const { errors } = await w.settle(KEY, { expect: ['AdoptionNotAllowed'] });
    assert.deepEqual(errors, []);
    assert.equal(synced(w)?.reason, 'ReconcileSuccess');
    assert.equal(statusOf(w).id, outside.id, 'adopted, generation unchanged');
    assert.equal(w.cloud.mutations().length, 0, 'nothing created');
  });

  test('adopting an object records it and says nothing was created', async () => {
    const w = open();
    const outside = w.cloud.put({ name: 'x' });
    w.api.create('w', {}, { annotations: { [EXTERNAL_ID]: outside.id } });
    await w.settle(KEY);
    assert.equal(statusOf(w).id, outside.id);
    assert.deepEqual(w.eventsOf(KEY), []);
    assert.deepEqual(w.cloud.mutations(), []);
  });
});

describe('claims', () => {
  test('a kind whose objects carry no marker judges claims without one', async () => {
    const w = open({ adapt: (base) => ({ ...base, markerOf: undefined }) });
    const outside = w.cloud.put({ name: 'x', marker: 'uid-somebody' });
    w.api.create('w', {}, { annotations: { [EXTERNAL_ID]: outside.id } });
    await w.settle(KEY);
    assert.equal(statusOf(w).id, outside.id);
    assert.equal(synced(w)?.reason, 'ReconcileSuccess');
  });

  test('an object made for a resource since deleted may be adopted', async () => {
    const w = open();
    const outside = w.cloud.put({ name: 'x', marker: 'uid-long-gone' });
    w.api.create('w', {}, { annotations: { [EXTERNAL_ID]: outside.id } });
    await w.settle(KEY);
    assert.equal(statusOf(w).id, outside.id);
  });

  test('an object made for another live resource is refused, after the read, with the reason', async () => {
    const w = open();
    const owner = w.api.create('owner', {}, {}, 'ns-b');
    const theirs = w.cloud.put({ name: 'theirs', marker: owner.metadata.uid });
    w.api.create('w', {}, { annotations: { [EXTERNAL_ID]: theirs.id } });
    const { errors } = await w.settle(KEY, { expect: ['AlreadyManaged'] });
    assert.equal(errors.at(-1)?.name, 'TerminalError');
    assert.equal(synced(w)?.reason, 'AlreadyManaged');
    assert.equal(
      synced(w)?.message,
      `the Widget named by annotation ${EXTERNAL_ID} cannot be managed by this resource: it was created for another resource, which still exists. A cloud object is managed by one resource only: point the annotation at an object no other resource holds, or delete this resource (removing the annotation would create a new, billed object)`,
    );
    assert.equal(statusOf(w).id, undefined);
  });

  test('an object whose marker names the resource is its own, though another names it too', async () => {
    const w = open();
    const mine = w.api.create('w', {}, {});
    const made = w.cloud.put({ name: 'w', marker: mine.metadata.uid });
    w.api.annotate(KEY, { [EXTERNAL_ID]: made.id });
    w.api.create('other', {}, { annotations: { [EXTERNAL_ID]: made.id } }, 'ns-b');
    await w.settle(KEY);
    assert.equal(statusOf(w).id, made.id);
    assert.equal(synced(w)?.reason, 'ReconcileSuccess');
  });

  test("a claim in an account of another API URL does not count: that is another cloud's object", async () => {
    const w = open({ others: [{ name: 'elsewhere', url: 'http://127.0.0.2:10/' }] });
    const outside = w.cloud.put({ name: 'x' });
    w.api.create('theirs', { providerConfigRef: { name: 'elsewhere' } }, {}, 'ns-b');
    w.api.setStatus('ns-b/theirs', { id: outside.id });
    w.api.create('w', {}, { annotations: { [EXTERNAL_ID]: outside.id } });
    await w.settle(KEY);
    assert.equal(statusOf(w).id, outside.id);
    assert.equal(synced(w)?.reason, 'ReconcileSuccess');
  });

  test('a claim proved in the same account counts', async () => {
    const w = open({ others: [{ name: 'elsewhere', url: 'http://127.0.0.2:10/' }] });
    const outside = w.cloud.put({ name: 'x' });
    w.api.create('theirs', {}, {}, 'ns-b');
    w.api.setStatus('ns-b/theirs', { id: outside.id });
    w.api.create('w', {}, { annotations: { [EXTERNAL_ID]: outside.id } });
    await w.settle(KEY, { expect: ['AlreadyManaged'] });
    assert.equal(synced(w)?.reason, 'AlreadyManaged');
  });

  test('two resources naming one unproved object are both refused', async () => {
    const w = open();
    const outside = w.cloud.put({ name: 'x' });
    w.api.create('w', {}, { annotations: { [EXTERNAL_ID]: outside.id } });
    w.api.create('v', {}, { annotations: { [EXTERNAL_ID]: outside.id } });
    await w.settle(KEY, { expect: ['AlreadyManaged'] });
    await w.settle('ns-a/v', { expect: ['AlreadyManaged'] });
    assert.equal(synced(w)?.reason, 'AlreadyManaged');
    assert.equal(synced(w, 'ns-a/v')?.reason, 'AlreadyManaged');
  });
});

describe('the named object missing', () => {
  test('an object the lists do not show yet is read with a get, once, and whole', async () => {
    // The cloud's lists lag behind: a new object shows in a get first. No list comes in between.
    const w = open({
      pollIntervalMs: 60_000,
      adapt: (base) => ({
        ...base,
        list: async () => (await base.list()).filter((widget) => widget.name !== 'fresh'),
      }),
    });
    w.api.create('v', {});
    await w.settle('ns-a/v');
    const fresh = w.cloud.put({ name: 'fresh' });
    w.api.create('w', {}, { annotations: { [EXTERNAL_ID]: fresh.id } });
    w.api.setStatus(KEY, { note: 'stale' });
    await w.reconcile(KEY);
    assert.equal(statusOf(w).note, undefined, 'what a get answers is whole: nothing carried from status');
    await w.reconcile(KEY);
    assert.equal(statusOf(w).id, fresh.id);
    assert.deepEqual(
      w.cloud.calls.filter((call) => call.op === 'get'),
      [{ op: 'get', id: fresh.id }],
    );
  });

  test('an id the cloud does not have is ExternalResourceNotFound, naming it', async () => {
    const w = open();
    w.api.create('w', {}, { annotations: { [EXTERNAL_ID]: '4242' } });
    const { errors } = await w.settle(KEY, { expect: ['ExternalResourceNotFound'] });
    assert.equal(errors.at(-1)?.name, 'TerminalError');
    assert.equal(synced(w)?.reason, 'ExternalResourceNotFound');
    assert.match(synced(w)?.message ?? '', /no live Widget with id 4242/);
  });

  test('a named object that is gone (terminated) counts as missing', async () => {
    const w = open();
    const dead = w.cloud.put({ name: 'x', status: 'TERMINATED' });
    w.api.create('w', {}, { annotations: { [EXTERNAL_ID]: dead.id } });
    await w.settle(KEY, { expect: ['ExternalResourceNotFound'] });
    assert.equal(synced(w)?.reason, 'ExternalResourceNotFound');
  });

  test('the object its status holds, gone, is replaced rather than refused', async () => {
    const w = open();
    w.api.create('w', {});
    await w.settle(KEY);
    const first = String(statusOf(w).id);
    w.cloud.objects.delete(first);
    await sleep(30);
    await w.settle(KEY);
    const second = String(statusOf(w).id);
    assert.notEqual(second, first);
    assert.equal(synced(w)?.reason, 'ReconcileSuccess');
  });
});

describe('re-pointing', () => {
  test('removing the annotation of a live resource is refused, saying it was removed', async () => {
    const w = open();
    w.api.create('w', {});
    await w.settle(KEY, { expect: ['ExternalIdChanged'] });
    const own = String(statusOf(w).id);
    w.api.annotate(KEY, { [EXTERNAL_ID]: null });
    const { errors } = await w.settle(KEY, { expect: ['ExternalIdChanged'] });
    assert.equal(errors.at(-1)?.name, 'TerminalError');
    assert.equal(synced(w)?.reason, 'ExternalIdChanged');
    assert.equal(
      synced(w)?.message,
      `annotation ${EXTERNAL_ID} was removed while this resource still manages Widget ${own}; set it back to ${own}, or delete the resource (its deletionPolicy applies to ${own})`,
    );
    assert.equal(w.cloud.calls.filter((call) => call.op === 'create').length, 1, 'no second create');
  });

  test('changing the annotation of a live resource is refused, naming the new id', async () => {
    const w = open();
    w.api.create('w', {});
    await w.settle(KEY, { expect: ['ExternalIdChanged'] });
    const own = String(statusOf(w).id);
    const other = w.cloud.put({ name: 'o' });
    w.api.annotate(KEY, { [EXTERNAL_ID]: other.id });
    await w.settle(KEY, { expect: ['ExternalIdChanged'] });
    assert.match(
      synced(w)?.message ?? '',
      new RegExp(`was changed to ${other.id} while this resource still manages Widget ${own};`),
    );
  });

  test('once the held object is gone, a new id adopts another object', async () => {
    const w = open();
    w.api.create('w', {});
    await w.settle(KEY);
    const own = String(statusOf(w).id);
    const widget = w.cloud.objects.get(own);
    assert.ok(widget);
    widget.status = 'TERMINATED';
    const other = w.cloud.put({ name: 'o' });
    await sleep(30);
    w.api.annotate(KEY, { [EXTERNAL_ID]: other.id });
    await w.settle(KEY);
    assert.equal(statusOf(w).id, other.id);
    assert.equal(synced(w)?.reason, 'ReconcileSuccess');
  });

  test('once the held object is gone from the cloud, removing the annotation creates a new one', async () => {
    const w = open();
    w.api.create('w', {});
    await w.settle(KEY);
    const own = String(statusOf(w).id);
    w.cloud.objects.delete(own);
    await sleep(30);
    w.api.annotate(KEY, { [EXTERNAL_ID]: null });
    await w.settle(KEY);
    assert.notEqual(statusOf(w).id, own);
    assert.equal(w.cloud.live().length, 1);
  });
});

describe('what a resource must name', () => {
  test('without Create in its policies and no id, the resource is refused: ExternalIdRequired', async () => {
    const w = open();
    w.api.create('w', { managementPolicies: ['Observe', 'Update'] });
    const { errors } = await w.settle(KEY, { expect: ['ExternalIdRequired'] });
    assert.equal(errors.at(-1)?.name, 'TerminalError');
    assert.equal(synced(w)?.reason, 'ExternalIdRequired');
    assert.equal(
      synced(w)?.message,
      `managementPolicies do not include Create: set annotation ${EXTERNAL_ID} to the id of the cloud Widget to observe`,
    );
    assert.deepEqual(w.cloud.mutations(), []);
  });

  test('with Create in its policies an unnamed resource is created', async () => {
    const w = open();
    w.api.create('w', { managementPolicies: ['Observe', 'Create'] });
    await w.settle(KEY);
    assert.equal(w.cloud.live().length, 1);
  });
});

describe('creating and recovering', () => {
  test('a create is said as an event and logged, and the new object is seen without a get', async () => {
    const logs = captureLogs();
    const w = open({ log: logs.logger });
    w.api.create('w', {});
    await w.settle(KEY);
    const id = String(statusOf(w).id);
    const created = w.eventsOf(KEY).filter((event) => event.reason === 'Created');
    assert.deepEqual(
      created.map((event) => [event.type, event.message]),
      [['Normal', `created Widget ${id} in the cloud`]],
    );
    const line = logs.lines.find((entry) => entry.msg === `created Widget ${id} in the cloud`);
    assert.equal(line?.id, id);
    assert.equal(line?.resource, KEY);
    assert.deepEqual(
      w.cloud.calls.filter((call) => call.op === 'get'),
      [],
    );
  });

  test('a fresh create intent is waited out before a search, with nothing created', async () => {
    const w = open();
    const obj = w.api.create('w', {}, { finalizers: [FINALIZER] });
    // Written "now" by a clock a little ahead of ours (within the skew allowed): still fresh however
    // long a loaded machine takes to get to the reconcile.
    w.api.annotate(KEY, intent(obj.metadata.uid, 'w', Date.now() + 500));
    const result = await w.reconcile(KEY);
    assert.ok(
      (result.requeueAfterMs ?? 0) > 0 && (result.requeueAfterMs ?? 0) <= 530,
      JSON.stringify(result),
    );
    assert.deepEqual(w.cloud.mutations(), []);
    assert.deepEqual(w.eventsOf(KEY), []);
  });

  test('the reconcile right after a create sees the new object without a get', async () => {
    // No list comes between the two reconciles, and recording the id takes a few milliseconds: the
    // object as the create answered it is older than the act that made it.
    const w = open({
      pollIntervalMs: 60_000,
      writer: (base) => ({
        ...base,
        patchObject: async (mr, patch) => {
          await sleep(5);
          return base.patchObject(mr, patch);
        },
      }),
    });
    w.api.create('w', {});
    await w.reconcile(KEY);
    await w.reconcile(KEY);
    assert.ok(statusOf(w).id);
    assert.deepEqual(
      w.cloud.calls.filter((call) => call.op === 'get'),
      [],
    );
  });

  test('what a create makes is reported whole: nothing is carried from the status of before', async () => {
    const w = open({
      adapt: (base) => ({
        ...base,
        observe: (mr, widget) => ({
          ...base.observe(mr, widget),
          status: { size: widget.size, host: (widget as { host?: string }).host },
        }),
      }),
    });
    w.api.create('w', {});
    w.api.setStatus(KEY, { host: 'stale-host' });
    await w.reconcile(KEY);
    assert.ok(statusOf(w).id);
    assert.equal(statusOf(w).host, undefined);
  });

  test('a created object is not completed again; a recovered one is completed once', async () => {
    const w = open({
      adapt: (base: Kind, cloud): Kind => ({
        ...base,
        enrich: async (widget) => {
          cloud.calls.push({ op: 'enrich', id: widget.id });
          return widget;
        },
      }),
    });
    w.api.create('w', {});
    await w.settle(KEY);
    assert.deepEqual(
      w.cloud.calls.filter((call) => call.op === 'enrich'),
      [],
    );

    const at = Date.now() - 5_000;
    const obj = w.api.create('r', {}, { finalizers: [FINALIZER] });
    w.api.annotate('ns-a/r', intent(obj.metadata.uid, 'r', at));
    const made = w.cloud.put({ name: 'r', marker: obj.metadata.uid, createdAt: at + 10 });
    await w.settle('ns-a/r');
    assert.equal(statusOf(w, 'ns-a/r').id, made.id);
    assert.deepEqual(
      w.cloud.calls.filter((call) => call.op === 'enrich'),
      [{ op: 'enrich', id: made.id }],
    );
    const recovered = w.eventsOf('ns-a/r').filter((event) => event.reason === 'Recovered');
    assert.deepEqual(
      recovered.map((event) => [event.type, event.message]),
      [['Normal', `found Widget ${made.id} made by an interrupted create and took it over`]],
    );
  });
});
