import assert from 'node:assert/strict';
import { afterEach, describe, test } from 'node:test';
import { CREATE_INTENT, CREATE_NAME, EXTERNAL_ID, FINALIZER } from '../../src/managed/core/annotations.ts';
import { ReconcileError } from '../../src/managed/core/errors.ts';
import { sealIntent } from '../../src/managed/creation/creation.ts';
import { conditionOf } from './fakes.ts';
import { type WidgetWorld, widgetWorld } from './world.ts';

// The generic reconciler's stories that take more than one row of reconciler-table.test.ts (the table of
// its branches): races, what is written in which order, what a refusal says. On the fakes of
// test/managed/fakes.ts: no apiserver, no simulator, milliseconds a case. What crosses a boundary is tested
// end to end in test/operator/.

const KEY = 'ns-a/w';
let world: WidgetWorld;

afterEach(async () => world?.close());

function open(options?: Parameters<typeof widgetWorld>[0]): WidgetWorld {
  world = widgetWorld(options);
  return world;
}

/** The create intent an operator holding `key` writes before a create, dated `at`. */
function intent(uid: string, name: string, at: number, key = 'signing-key') {
  return { [CREATE_INTENT]: `${at}.${sealIntent(key, uid, at, name)}`, [CREATE_NAME]: name };
}

const synced = (w: WidgetWorld, key = KEY) => conditionOf(w.api.get(key), 'Synced');
const ready = (w: WidgetWorld, key = KEY) => conditionOf(w.api.get(key), 'Ready');

describe('creation', () => {
  test('a new resource gets its finalizer with the intent, one create, its id and Ready', async () => {
    const w = open();
    w.api.create('w', { size: 2 });
    await w.settle(KEY);
    const obj = w.api.get(KEY);
    assert.equal(w.cloud.mutations().filter((call) => call.op === 'create').length, 1);
    const [made] = w.cloud.live();
    assert.equal(obj?.status?.id, made?.id);
    assert.equal(obj?.metadata.annotations?.[EXTERNAL_ID], made?.id);
    assert.equal(obj?.metadata.annotations?.[CREATE_INTENT], undefined, 'the intent is retired');
    assert.deepEqual(obj?.metadata.finalizers, [FINALIZER]);
    assert.equal(made?.marker, obj?.metadata.uid, 'the object carries its owner marker');
    assert.equal(ready(w)?.status, 'True');
    assert.equal(synced(w)?.status, 'True');
    assert.ok(w.reasonsOf(KEY).includes('Created'));
    assert.equal(w.api.writes[0]?.what.includes(CREATE_INTENT), true, 'the intent is the first write');
    assert.equal(w.api.writes[0]?.what.includes(FINALIZER), true, 'with the finalizer');
    await w.settle(KEY);
    assert.equal(w.cloud.mutations().length, 1, 'a second reconcile sends nothing');
  });

  test("an interrupted create's object is found and recorded, never made twice", async () => {
    const w = open();
    const at = Date.now() - 5_000;
    const obj = w.api.create('w', {}, { finalizers: [FINALIZER] });
    w.api.annotate(KEY, intent(obj.metadata.uid, 'w', at));
    const made = w.cloud.put({ name: 'w', marker: obj.metadata.uid, createdAt: at + 10 });
    await w.settle(KEY);
    assert.equal(w.api.get(KEY)?.status?.id, made.id);
    assert.deepEqual(w.cloud.mutations(), [], 'no second create');
    assert.ok(w.reasonsOf(KEY).includes('Recovered'));
  });

  test('a forged intent (not signed by the operator) never takes over an object made for someone else', async () => {
    const w = open();
    const at = Date.now() - 5_000;
    const obj = w.api.create('w', {});
    w.api.annotate(KEY, intent(obj.metadata.uid, 'w', at, 'guessed-key'));
    const other = w.cloud.put({ name: 'w', createdAt: at + 10 });
    await w.settle(KEY);
    assert.notEqual(w.api.get(KEY)?.status?.id, other.id);
    assert.deepEqual(w.cloud.mutations(other.id), []);
  });

  test("a foreign unproved claim on a resource's own interrupted create does not send it into a second create", async () => {
    const w = open();
    const at = Date.now() - 5_000;
    const obj = w.api.create('w', {}, { finalizers: [FINALIZER] });
    w.api.annotate(KEY, intent(obj.metadata.uid, 'w', at));
    const made = w.cloud.put({ name: 'w', marker: obj.metadata.uid, createdAt: at + 10 });
    // Another namespace names that id by hand (ids are sequential, easy to guess).
    w.api.create('squatter', {}, { annotations: { [EXTERNAL_ID]: made.id } }, 'ns-b');
    await w.settle(KEY, { expect: ['AlreadyManaged'] });
    assert.equal(w.api.get(KEY)?.status?.id, made.id);
    assert.equal(w.cloud.mutations().filter((call) => call.op === 'create').length, 0);
    await w.settle('ns-b/squatter', { expect: ['AlreadyManaged'] });
    assert.equal(synced(w, 'ns-b/squatter')?.reason, 'AlreadyManaged');
  });

  test('a resource deleted while its create is in flight ends with its cloud object deleted', async () => {
    // The leak of chaos seed 3691406898: the id's record answered 404, and the object was left billed.
    const w = open();
    w.api.create('w', {});
    w.cloud.duringCreate = () => {
      w.api.delete(KEY);
      w.api.objects.delete(KEY);
    };
    await w.settle(KEY, { expect: ['ResourceGone'] });
    assert.equal(w.api.get(KEY), undefined);
    assert.deepEqual(w.cloud.live(), [], 'nothing made for the resource is left running');
  });

  test('a resource the apiserver removes with its finalizer (a DELETE racing the intent write) has its create undone', async () => {
    // kubernetes/kubernetes#77988, as in chaos seed 3691406898: the DELETE read the resource before the
    // intent write added the finalizer and removed it after; the watch delivers the state it went in.
    const w = open();
    w.api.create('w', {});
    w.cloud.duringCreate = () => w.reconciler.vanished(w.api.vanish(KEY), true);
    await w.settle(KEY, { expect: ['ResourceGone'] });
    assert.equal(w.api.get(KEY), undefined);
    assert.deepEqual(w.cloud.live(), []);
  });

  test('a resource removed with its finalizer after its id was recorded has its object deleted', async () => {
    const w = open();
    w.api.create('w', {});
    await w.settle(KEY);
    const id = String(w.api.get(KEY)?.status?.id);
    w.reconciler.vanished(w.api.vanish(KEY), true);
    await w.settle(KEY);
    assert.equal(w.cloud.objects.get(id)?.status, 'TERMINATED');
    assert.ok(w.reasonsOf(KEY).includes('Deleting'));
  });

  test('a vanished resource keeps its deletion policy, and a relist that merely misses it deletes nothing', async () => {
    const w = open();
    w.api.create('w', { deletionPolicy: 'Orphan' });
    w.api.create('v', {});
    await w.settle(KEY);
    await w.settle('ns-a/v');
    const orphan = String(w.api.get(KEY)?.status?.id);
    const listed = String(w.api.get('ns-a/v')?.status?.id);
    w.reconciler.vanished(w.api.vanish(KEY), true);
    // A relist finds v gone: its last state seen may predate a change that matters, so it is not acted on.
    w.reconciler.vanished(w.api.vanish('ns-a/v'), false);
    await w.settle(KEY);
    await w.settle('ns-a/v');
    assert.equal(w.cloud.objects.get(orphan)?.status, 'RUNNING');
    assert.equal(w.cloud.objects.get(listed)?.status, 'RUNNING');
  });

  test('the delete event of a resource this process released (it carries the finalizer) is not a vanished resource', async () => {
    // The apiserver deletes instead of writing the update that removes the last finalizer, so the watch's
    // DELETED event carries the state stored before it, finalizer and all.
    const w = open();
    w.api.create('w', {});
    await w.settle(KEY);
    const id = String(w.api.get(KEY)?.status?.id);
    w.api.annotate(KEY, { 'gpucloud.io/skip-reconcile': 'true' });
    w.api.delete(KEY);
    const lastStored = w.api.get(KEY);
    assert.ok(lastStored?.metadata.finalizers?.includes(FINALIZER));
    if (!lastStored) return;
    await w.settle(KEY);
    assert.equal(w.api.get(KEY), undefined, 'released');
    const calls = w.cloud.calls.length;
    w.reconciler.vanished(lastStored, true);
    await w.settle(KEY);
    assert.equal(w.cloud.objects.get(id)?.status, 'RUNNING', 'skip-reconcile: left alone');
    assert.equal(w.cloud.calls.length, calls, 'no call at all');
  });

  test('a transient create failure is retried; a terminal one is reported and not retried', async () => {
    const w = open();
    w.api.create('w', {});
    w.cloud.failNextCreate = new ReconcileError('CloudUnavailable', 'try later', { terminal: false });
    await w.settle(KEY, { expect: ['CloudRejected', 'CloudUnavailable'] });
    assert.equal(w.cloud.live().length, 1, 'made on a later try');
    assert.equal(synced(w)?.status, 'True');

    w.api.create('t', {});
    w.cloud.failNextCreate = new ReconcileError('CloudRejected', 'no such widget type', { terminal: true });
    const { errors } = await w.settle('ns-a/t', { expect: ['CloudRejected', 'CloudUnavailable'] });
    assert.equal(errors.at(-1)?.name, 'TerminalError');
    assert.equal(synced(w, 'ns-a/t')?.reason, 'CloudRejected');
    const creates = w.cloud.calls.filter((call) => call.op === 'create').length;
    await w.reconciler.reconcile({ namespace: 'ns-a', name: 't' });
    assert.equal(w.cloud.calls.filter((call) => call.op === 'create').length, creates, 'not asked again');
    assert.ok(w.recorded.fleet.includes('refused CloudRejected'));
  });
});

test('a copy older than this process’s own intent is read again, backing off: never a wait for a grace, which would restart the backoff', async () => {
  // Found by the chaos suite: a resource whose creates always fail (a missing Secret) read, between two
  // failures, a cached copy still showing the intent before the last. Waiting out that intent's grace
  // returned normally, the work queue forgot the failures, and the backoff started over.
  const w = open({ still: true });
  w.start();
  w.api.create('w', {});
  const refuse = () => {
    w.cloud.failNextCreate = new ReconcileError('SecretNotFound', 'no Secret', { terminal: false });
  };
  refuse();
  await assert.rejects(w.reconcile(KEY), /no Secret/);
  w.clock.advance(10);
  refuse();
  await assert.rejects(w.reconcile(KEY), /no Secret/);
  const creates = w.cloud.calls.filter((call) => call.op === 'create').length;
  assert.equal(creates, 2, 'each fresh turn sends its create');
  // The informer still shows the first intent (two writes per failed turn: the intent, the failure).
  w.api.lag = () => 2;
  const intentAt = (obj: { metadata: { annotations?: Record<string, string> } } | undefined) =>
    Number(obj?.metadata.annotations?.[CREATE_INTENT]?.split('.')[0]);
  const seen = intentAt(w.api.store.get({ namespace: 'ns-a', name: 'w' }));
  assert.ok(seen < intentAt(w.api.get(KEY)), 'the copy read is older than the intent written');
  assert.deepEqual(await w.reconcile(KEY), { requeue: true }, 'looked at again, rate limited');
  w.api.lag = () => 0;
  refuse();
  await assert.rejects(w.reconcile(KEY), /no Secret/, 'the next turn tries the create at once');
  assert.equal(w.cloud.calls.filter((call) => call.op === 'create').length, creates + 1);
});

test('a copy this process has written over is put off: no cloud call, no write, no conflict', async () => {
  // A cloud change can bring a resource back before the informer shows the status its last turn wrote;
  // a turn from that copy would only earn a 409.
  const w = open({ still: true });
  w.start();
  w.api.create('w', {});
  await w.reconcile(KEY); // the finalizer and the intent, then the create and its status
  const written = w.api.writes.length;
  const calls = w.cloud.calls.length;
  assert.ok(written > 0);
  w.api.lag = () => 1;
  assert.deepEqual(await w.reconcile(KEY), { deferred: true }, 'nothing to do until the write shows');
  assert.equal(w.api.writes.length, written, 'no write');
  assert.deepEqual(w.api.conflicts, [], 'no write refused as stale');
  assert.equal(w.cloud.calls.length, calls, 'no cloud call');
  w.api.lag = () => 0;
  await w.settle(KEY);
  assert.equal(ready(w)?.status, 'True', 'the copy past the write goes on');
});

describe('adoption and claims', () => {
  test('adopting late-initialises the spec from the cloud once, and changes nothing', async () => {
    const w = open();
    const outside = w.cloud.put({ name: 'made-by-hand', status: 'PAUSED', size: 4 });
    w.api.create('w', {}, { annotations: { [EXTERNAL_ID]: outside.id } });
    await w.settle(KEY);
    const obj = w.api.get(KEY);
    assert.deepEqual(obj?.spec, { paused: true, size: 4 });
    assert.deepEqual(obj?.status?.lateInitialized, ['paused', 'size']);
    assert.deepEqual(w.cloud.mutations(), [], 'the paused object stays paused');
    assert.equal(obj?.status?.id, outside.id);
  });

  test('an id another resource proved is refused, naming no other resource', async () => {
    const w = open();
    w.api.create('owner', {}, {}, 'ns-b');
    await w.settle('ns-b/owner', { expect: ['AlreadyManaged'] });
    const id = String(w.api.get('ns-b/owner')?.status?.id);
    w.api.create('w', { paused: true }, { annotations: { [EXTERNAL_ID]: id } });
    await w.settle(KEY, { expect: ['AlreadyManaged'] });
    assert.equal(synced(w)?.reason, 'AlreadyManaged');
    assert.ok(!synced(w)?.message.includes('ns-b') && !synced(w)?.message.includes('owner'));
    assert.deepEqual(w.cloud.mutations(id).slice(1), [], 'no pause reached it');
    assert.equal(w.api.get(KEY)?.status?.id, undefined);
  });

  test('an id of another account answers as one that does not exist', async () => {
    const w = open();
    const foreign = w.cloud.put({ name: 'theirs', org: 'org-2' });
    w.api.create('w', {}, { annotations: { [EXTERNAL_ID]: foreign.id } });
    await w.settle(KEY, { expect: ['ExternalResourceNotFound'] });
    assert.equal(synced(w)?.reason, 'ExternalResourceNotFound');
    w.api.create('v', {}, { annotations: { [EXTERNAL_ID]: '999999' } });
    await w.settle('ns-a/v', { expect: ['ExternalResourceNotFound'] });
    assert.equal(synced(w, 'ns-a/v')?.reason, 'ExternalResourceNotFound');
    assert.equal(
      synced(w)?.message.replace(foreign.id, 'ID'),
      synced(w, 'ns-a/v')?.message.replace('999999', 'ID'),
      'the two answers differ only by the id',
    );
  });

  test('an id managed in another account on the same API URL is not revealed as managed', async () => {
    const w = open({ others: [{ name: 'team-b', org: 'org-2' }] });
    w.api.create('victim', {}, {}, 'ns-a');
    await w.settle('ns-a/victim', { expect: ['ExternalResourceNotFound'] });
    const id = String(w.api.get('ns-a/victim')?.status?.id);
    const probe = { providerConfigRef: { name: 'team-b' } };
    w.api.create('probe', probe, { annotations: { [EXTERNAL_ID]: id } }, 'ns-b');
    w.api.create('blank', probe, { annotations: { [EXTERNAL_ID]: '999999' } }, 'ns-b');
    await w.settle('ns-b/probe', { expect: ['ExternalResourceNotFound'] });
    await w.settle('ns-b/blank', { expect: ['ExternalResourceNotFound'] });
    assert.equal(synced(w, 'ns-b/probe')?.reason, 'ExternalResourceNotFound');
    assert.equal(synced(w, 'ns-b/blank')?.reason, 'ExternalResourceNotFound');
  });

  test('an empty external-id names nothing: Observe only still refuses to create', async () => {
    const w = open();
    w.api.create('w', { managementPolicies: ['Observe'] }, { annotations: { [EXTERNAL_ID]: '' } });
    await w.settle(KEY, { expect: ['ExternalIdRequired'] });
    assert.equal(synced(w)?.reason, 'ExternalIdRequired');
    assert.deepEqual(w.cloud.mutations(), [], 'nothing is created');
  });

  test('re-pointing the id of a live resource is refused, and its object is not orphaned', async () => {
    const w = open();
    w.api.create('w', {});
    await w.settle(KEY, { expect: ['ExternalIdChanged'] });
    const own = String(w.api.get(KEY)?.status?.id);
    const other = w.cloud.put({ name: 'other' });
    w.api.annotate(KEY, { [EXTERNAL_ID]: other.id });
    await w.settle(KEY, { expect: ['ExternalIdChanged'] });
    assert.equal(synced(w)?.reason, 'ExternalIdChanged');
    assert.equal(w.api.get(KEY)?.status?.id, own);
    assert.deepEqual(w.cloud.mutations(other.id), []);
  });
});

describe('observing, drift and updates', () => {
  test('a field the cloud cannot change is Drifted, reported once, never fixed by a re-create', async () => {
    const w = open();
    w.api.create('w', { size: 1 });
    await w.settle(KEY);
    w.api.patchSpec(KEY, { size: 8 });
    await w.settle(KEY);
    await w.settle(KEY);
    assert.equal(synced(w)?.reason, 'Drifted');
    assert.match(synced(w)?.message ?? '', /size/);
    assert.equal(w.reasonsOf(KEY).filter((reason) => reason === 'Drifted').length, 1);
    assert.equal(w.cloud.calls.filter((call) => call.op === 'create').length, 1);
  });

  test('one step per reconcile toward the spec: pause, then resume', async () => {
    const w = open();
    w.api.create('w', {});
    await w.settle(KEY);
    w.api.patchSpec(KEY, { paused: true });
    await w.settle(KEY);
    assert.equal(w.api.get(KEY)?.status?.phase, 'PAUSED');
    w.api.patchSpec(KEY, { paused: false });
    await w.settle(KEY);
    assert.deepEqual(
      w.cloud.mutations().map((call) => call.op),
      ['create', 'pause', 'resume'],
    );
  });
});

describe('deletion', () => {
  test('Delete deletes the cloud object, then lets the resource go', async () => {
    const w = open();
    w.api.create('w', {});
    await w.settle(KEY);
    const id = String(w.api.get(KEY)?.status?.id);
    w.api.delete(KEY);
    await w.settle(KEY);
    assert.equal(w.api.get(KEY), undefined);
    assert.equal(w.cloud.objects.get(id)?.status, 'TERMINATED');
  });

  test('Orphan lets the resource go and leaves the object running', async () => {
    const w = open();
    w.api.create('w', { deletionPolicy: 'Orphan' });
    await w.settle(KEY);
    const id = String(w.api.get(KEY)?.status?.id);
    w.api.delete(KEY);
    await w.settle(KEY);
    assert.equal(w.api.get(KEY), undefined);
    assert.equal(w.cloud.objects.get(id)?.status, 'RUNNING');
    assert.deepEqual(w.cloud.mutations(id), []);
  });

  test('a deleted resource with an interrupted create deletes what that create made', async () => {
    const w = open();
    const at = Date.now() - 5_000;
    const obj = w.api.create('w', {}, { finalizers: [FINALIZER] });
    w.api.annotate(KEY, intent(obj.metadata.uid, 'w', at));
    const made = w.cloud.put({ name: 'w', marker: obj.metadata.uid, createdAt: at + 10 });
    w.api.delete(KEY);
    await w.settle(KEY);
    assert.equal(w.api.get(KEY), undefined);
    assert.equal(w.cloud.objects.get(made.id)?.status, 'TERMINATED');
  });

  test("a namespace the account does not list cannot delete that account's object, even with a hand-written finalizer", async () => {
    const w = open({ policy: { allowsNamespace: (namespace) => namespace === 'team-c' } });
    const victim = w.cloud.put({ name: 'x' });
    w.api.create(
      'grab',
      {},
      { annotations: { [EXTERNAL_ID]: victim.id }, finalizers: [FINALIZER] },
      'team-b',
    );
    await w.settle('team-b/grab', { expect: ['ProviderConfigNotAllowed'] });
    assert.equal(synced(w, 'team-b/grab')?.reason, 'ProviderConfigNotAllowed');
    w.api.delete('team-b/grab');
    await w.settle('team-b/grab', { expect: ['ProviderConfigNotAllowed'] });
    assert.equal(w.api.get('team-b/grab'), undefined, 'the deletion does not hang');
    assert.deepEqual(
      w.cloud.calls.filter((call) => call.id === victim.id),
      [],
      'no call named it',
    );
    assert.equal(w.cloud.objects.get(victim.id)?.status, 'RUNNING');
  });
});

describe('preemption', () => {
  test('Recreate deletes the preempted object before making its replacement: never two live', async () => {
    const w = open();
    w.api.create('w', { spot: true, recoveryPolicy: 'Recreate' });
    await w.settle(KEY);
    const first = String(w.api.get(KEY)?.status?.id);
    const widget = w.cloud.objects.get(first);
    assert.ok(widget);
    widget.status = 'FAILED';
    await w.settle(KEY, 3);
    assert.equal(ready(w)?.reason, 'Preempted');
    assert.equal(w.api.get(KEY)?.status?.preemptions, 1);
    assert.equal(w.cloud.objects.get(first)?.status, 'TERMINATED', 'deleted first');
    // The replacement waits out its backoff, 10 s after the first preemption.
    w.clock.advance(10_000);
    await w.settle(KEY);
    const second = w.api.get(KEY)?.status?.id;
    assert.notEqual(second, first);
    assert.equal(w.cloud.live().length, 1);
    assert.ok(w.recorded.fleet.includes('preempted'));
  });

  test('Never leaves a preempted object down and counts it once', async () => {
    const w = open();
    w.api.create('w', { spot: true });
    await w.settle(KEY);
    const id = String(w.api.get(KEY)?.status?.id);
    const widget = w.cloud.objects.get(id);
    assert.ok(widget);
    widget.status = 'FAILED';
    await w.settle(KEY, 3);
    await w.settle(KEY, 3);
    assert.equal(w.api.get(KEY)?.status?.preemptions, 1);
    assert.deepEqual(w.cloud.mutations(id), []);
  });
});

describe('reporting', () => {
  test('a connection Secret the resource does not own still leaves a truthful status', async () => {
    const w = open();
    w.api.secrets.set('ns-a/db-password', { data: { password: 'hunter2' } });
    w.api.create('w', { writeConnectionSecretToRef: { name: 'db-password' } });
    const { errors } = await w.settle(KEY, 3);
    const obj = w.api.get(KEY);
    assert.deepEqual(errors, []);
    assert.ok(obj?.status?.id, 'the id is in status');
    assert.equal(obj?.status?.phase, 'RUNNING');
    assert.equal(ready(w)?.status, 'True');
    assert.equal(synced(w)?.reason, 'ConnectionSecretNotOwned');
    assert.deepEqual(w.api.secrets.get('ns-a/db-password')?.data, { password: 'hunter2' });
    assert.ok(!JSON.stringify(obj).includes('hunter2'));
  });

  test('a refused connection Secret is said once as an event, and kept in the condition', async () => {
    const w = open();
    w.api.secrets.set('ns-a/taken', { data: { a: 'b' } });
    w.api.create('w', { writeConnectionSecretToRef: { name: 'taken' } });
    await w.settle(KEY, 3);
    await w.reconciler.reconcile({ namespace: 'ns-a', name: 'w' });
    await w.reconciler.reconcile({ namespace: 'ns-a', name: 'w' });
    assert.equal(w.reasonsOf(KEY).filter((reason) => reason === 'ConnectionSecretNotOwned').length, 1);
    assert.equal(synced(w)?.reason, 'ConnectionSecretNotOwned');
  });

  test('an owned connection Secret carries the details', async () => {
    const w = open();
    w.api.create('w', { writeConnectionSecretToRef: { name: 'conn' } });
    await w.settle(KEY);
    assert.deepEqual(w.api.secrets.get('ns-a/conn')?.data, { id: String(w.api.get(KEY)?.status?.id) });
  });
});

describe('the live-GPU limit, one reservation per account', () => {
  test('a burst against a slow cloud ends with exactly what the limit allows', async () => {
    // 2 GPUs already run outside the cluster; 30 one-GPU widgets are reconciled at once against a limit
    // of 10, every create answering after 40 ms: checks that run concurrently must see each other.
    const w = open({ policy: { maxLiveGpus: 10 } });
    w.cloud.put({ name: 'outside-1' });
    w.cloud.put({ name: 'outside-2' });
    w.cloud.createDelayMs = 40;
    const keys = Array.from({ length: 30 }, (_, index) => {
      w.api.create(`b-${index}`, { size: 1 });
      return `ns-a/b-${index}`;
    });
    await Promise.all(keys.map((key) => w.settle(key, 6)));
    assert.equal(w.cloud.live().length, 10, 'exactly 10 GPUs live');
    const refused = keys.filter((key) => synced(w, key)?.reason === 'GuardrailExceeded');
    assert.equal(refused.length, 22);
  });

  test('two ProviderConfigs with one key are one cloud account: a burst through both at once ends at the limit', async () => {
    // Each config limits the account to 10 GPUs; 15 widgets name each, all reconciled at once against a
    // slow cloud. Reserving per config would let 10 through each.
    const policy = { maxLiveGpus: 10 };
    const w = open({ policy, others: [{ name: 'twin', org: 'org-1', policy, sameKey: true }] });
    w.cloud.createDelayMs = 40;
    const keys = Array.from({ length: 30 }, (_, index) => {
      const spec = index % 2 === 0 ? { size: 1 } : { size: 1, providerConfigRef: { name: 'twin' } };
      w.api.create(`b-${index}`, spec);
      return `ns-a/b-${index}`;
    });
    await Promise.all(keys.map((key) => w.settle(key, 6)));
    assert.equal(w.cloud.live().length, 10, 'exactly 10 GPUs live in the one cloud account');
    const refused = keys.filter((key) => synced(w, key)?.reason === 'GuardrailExceeded');
    assert.equal(refused.length, 20);
  });

  test('a pod created paused counts at its create: the cloud runs what it creates', async () => {
    const w = open({ policy: { maxLiveGpus: 4 } });
    for (const name of ['o-1', 'o-2', 'o-3', 'o-4']) w.cloud.put({ name });
    w.api.create('w', { size: 2, paused: true });
    await w.settle(KEY, 4);
    assert.equal(synced(w)?.reason, 'GuardrailExceeded');
    assert.match(synced(w)?.message ?? '', /would make 6 live, over its limit of 4/);
    assert.equal(w.cloud.live().length, 4, 'nothing was created');
  });

  test('resuming a paused object is checked against the limit at the step that adds its GPUs', async () => {
    const w = open({ policy: { maxLiveGpus: 4 } });
    const paused = w.cloud.put({ name: 'sleeper', status: 'PAUSED', size: 2 });
    w.api.create('w', {}, { annotations: { [EXTERNAL_ID]: paused.id } });
    await w.settle(KEY);
    for (const name of ['o-1', 'o-2', 'o-3']) w.cloud.put({ name });
    // The account's cache lists every 10 ms here: let one list show the three.
    await new Promise((resolve) => setTimeout(resolve, 50));
    w.api.patchSpec(KEY, { paused: false });
    await w.settle(KEY, 4);
    assert.equal(synced(w)?.reason, 'GuardrailExceeded');
    assert.equal(w.cloud.objects.get(paused.id)?.status, 'PAUSED');
    assert.deepEqual(w.cloud.mutations(paused.id), []);
  });
});

describe('the live-GPU limit counts every kind of the account', () => {
  test('objects of a kind no resource names count from the first create on', async () => {
    // A gadget (another kind) made outside the cluster holds 3 GPUs; no resource of that kind exists.
    const w = open({ policy: { maxLiveGpus: 4 } });
    w.gadgets.put({ name: 'outside', size: 3 });
    w.api.create('w', { size: 2 });
    await w.settle(KEY, 4);
    assert.equal(synced(w)?.reason, 'GuardrailExceeded');
    assert.match(synced(w)?.message ?? '', /would make 5 live/);
    assert.deepEqual(w.cloud.live(), []);
  });
});
