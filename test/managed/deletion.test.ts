import assert from 'node:assert/strict';
import { afterEach, describe, test } from 'node:test';
import {
  CREATE_INTENT,
  CREATE_NAME,
  DELETION_PROTECTION,
  EXTERNAL_ID,
  FINALIZER,
  SKIP_RECONCILE,
} from '../../src/managed/core/annotations.ts';
import { ReconcileError } from '../../src/managed/core/errors.ts';
import { sealIntent } from '../../src/managed/creation/creation.ts';
import { DELETION_PROTECTED } from '../../src/managed/lifecycle/deletion.ts';
import { conditionOf } from './fakes.ts';
import { type WidgetWorld, widgetWorld } from './world.ts';

// Deletion and release: which cloud object a deleted resource deletes, if any; the events that say why
// it was let go; resources the apiserver removed with the finalizer; skipped and refused resources.

const KEY = 'ns-a/w';
const AT = { namespace: 'ns-a', name: 'w' };
let world: WidgetWorld;

afterEach(async () => world?.close());

function open(options?: Parameters<typeof widgetWorld>[0]): WidgetWorld {
  world = widgetWorld(options);
  return world;
}

/** Changes the widget kind of `w` before its first reconcile. */

function intent(uid: string, name: string, at: number) {
  return { [CREATE_INTENT]: `${at}.${sealIntent('signing-key', uid, at, name)}`, [CREATE_NAME]: name };
}

async function made(w: WidgetWorld, spec: Record<string, unknown> = {}, key = KEY): Promise<string> {
  const [namespace = '', name = ''] = key.split('/');
  w.api.create(name, spec, {}, namespace);
  await w.settle(key);
  const id = w.api.get(key)?.status?.id;
  assert.ok(typeof id === 'string');
  return id;
}

const eventsOf = (w: WidgetWorld, key = KEY) => w.recorded.events.filter((event) => event.key === key);
const last = (w: WidgetWorld, key = KEY) => eventsOf(w, key).at(-1);
const deletes = (w: WidgetWorld) => w.cloud.calls.filter((call) => call.op === 'delete');

describe('a deleted resource', () => {
  test('deletes its object, says so, and is let go once the cloud shows it deleted', async () => {
    const w = open();
    const id = await made(w);
    w.api.delete(KEY);
    const first = await w.reconciler.reconcile(AT);
    assert.deepEqual(first, { requeueAfterMs: 20 });
    assert.deepEqual(last(w), {
      key: KEY,
      type: 'Normal',
      reason: 'Deleting',
      message: `deleting Widget ${id} in the cloud`,
    });
    assert.ok(w.api.get(KEY), 'held until the cloud shows it deleted');
    await w.settle(KEY);
    assert.equal(w.api.get(KEY), undefined);
    assert.deepEqual(last(w), {
      key: KEY,
      type: 'Normal',
      reason: 'Deleted',
      message: `Widget ${id} is deleted in the cloud`,
    });
    assert.deepEqual(new Set(deletes(w).map((call) => call.id)), new Set([id]), 'only its own object');
  });

  test('a stale copy of a resource already let go ends quietly: no failure, no Warning, no second release', async () => {
    const w = open();
    await made(w);
    w.api.delete(KEY);
    await w.settle(KEY);
    assert.equal(w.api.get(KEY), undefined, 'released and removed');
    const released = eventsOf(w).filter((event) => event.reason === 'Deleted').length;
    // The informer has not yet delivered the release: it still shows the deleting copy with our finalizer.
    w.api.lag = () => 2;
    const seen = w.api.store.get(AT);
    assert.ok(seen?.metadata.finalizers?.includes(FINALIZER) && seen.metadata.deletionTimestamp);
    assert.deepEqual(await w.reconciler.reconcile(AT), {});
    assert.deepEqual(
      eventsOf(w).filter((event) => event.type === 'Warning'),
      [],
      'the finalizer already gone is not a failure',
    );
    assert.equal(eventsOf(w).filter((event) => event.reason === 'Deleted').length, released);
  });

  test('of a kind that cannot delete is Released, and its object left', async () => {
    const w = open({ adapt: ({ delete: _delete, ...kind }) => kind });
    const id = await made(w);
    w.api.delete(KEY);
    assert.deepEqual(await w.reconciler.reconcile(AT), {});
    assert.equal(w.api.get(KEY), undefined);
    assert.deepEqual(last(w)?.reason, 'Released');
    assert.equal(last(w)?.message, 'a Widget leaves nothing in the cloud to delete');
    assert.equal(w.cloud.objects.get(id)?.status, 'RUNNING');
  });

  test('with deletionPolicy Orphan is Orphaned, saying the object is left running', async () => {
    const w = open();
    const id = await made(w, { deletionPolicy: 'Orphan' });
    w.api.delete(KEY);
    assert.deepEqual(await w.reconciler.reconcile(AT), {});
    assert.equal(w.api.get(KEY), undefined);
    assert.equal(last(w)?.reason, 'Orphaned');
    assert.equal(last(w)?.message, 'deletionPolicy is Orphan: the cloud resource is left running');
    assert.deepEqual(w.cloud.mutations(id), []);
  });

  test('whose managementPolicies lack Delete is Orphaned, and its object left as it is', async () => {
    const w = open();
    const id = await made(w, { managementPolicies: ['Observe', 'Create', 'Update', 'LateInitialize'] });
    w.api.delete(KEY);
    assert.deepEqual(await w.reconciler.reconcile(AT), {});
    assert.equal(w.api.get(KEY), undefined);
    assert.equal(last(w)?.reason, 'Orphaned');
    assert.equal(
      last(w)?.message,
      'managementPolicies do not include Delete: the cloud resource is left as it is',
    );
    assert.deepEqual(w.cloud.mutations(id), []);
  });

  test('whose deletionPolicy is Delete with every policy deletes its object', async () => {
    const w = open();
    const id = await made(w, { deletionPolicy: 'Delete', managementPolicies: ['*'] });
    w.api.delete(KEY);
    await w.settle(KEY);
    assert.equal(w.cloud.objects.get(id)?.status, 'TERMINATED');
  });

  test('holding another finalizer only is not the operator’s to let go', async () => {
    const w = open();
    const outside = w.cloud.put({ name: 'w' });
    w.api.create('w', {}, { annotations: { [EXTERNAL_ID]: outside.id }, finalizers: ['someone/else'] });
    w.api.delete(KEY);
    assert.deepEqual(await w.reconciler.reconcile(AT), {});
    assert.deepEqual(w.api.get(KEY)?.metadata.finalizers, ['someone/else']);
    assert.deepEqual(eventsOf(w), []);
    assert.deepEqual(w.cloud.mutations(), []);
  });

  test('deletes the object its status holds first, not one the annotation was re-pointed to', async () => {
    const w = open();
    const own = await made(w);
    const other = w.cloud.put({ name: 'other' });
    w.api.annotate(KEY, { [EXTERNAL_ID]: other.id });
    await w.settle(KEY, { expect: ['ExternalIdChanged'] });
    w.api.delete(KEY);
    await w.settle(KEY, { expect: ['ExternalIdChanged'] });
    assert.equal(w.api.get(KEY), undefined);
    assert.equal(w.cloud.objects.get(own)?.status, 'TERMINATED');
    assert.equal(deletes(w)[0]?.id, own);
  });

  test('whose status names an object already gone deletes the annotated one it may claim', async () => {
    const w = open();
    const named = w.cloud.put({ name: 'w' });
    w.api.create('w', {}, { annotations: { [EXTERNAL_ID]: named.id }, finalizers: [FINALIZER] });
    w.api.setStatus(KEY, { id: '999' });
    w.api.delete(KEY);
    await w.settle(KEY);
    assert.equal(w.api.get(KEY), undefined);
    assert.equal(w.cloud.objects.get(named.id)?.status, 'TERMINATED');
    assert.deepEqual(
      deletes(w).map((call) => call.id),
      [named.id],
    );
  });

  test('never deletes an object another resource proved is its own', async () => {
    const w = open();
    const theirs = await made(w, {}, 'ns-b/owner');
    w.api.create('w', {}, { annotations: { [EXTERNAL_ID]: theirs }, finalizers: [FINALIZER] });
    w.api.delete(KEY);
    await w.settle(KEY);
    assert.equal(w.api.get(KEY), undefined);
    assert.equal(last(w)?.reason, 'Deleted');
    assert.equal(last(w)?.message, 'nothing to delete');
    assert.equal(w.cloud.objects.get(theirs)?.status, 'RUNNING');
    assert.deepEqual(w.cloud.mutations(theirs).slice(1), []);
  });

  test('never deletes an object made for another live resource (its owner marker)', async () => {
    const w = open();
    const owner = w.api.create('owner', {}, {}, 'ns-b');
    const theirs = w.cloud.put({ name: 'owner', marker: owner.metadata.uid });
    w.api.create('w', {}, { annotations: { [EXTERNAL_ID]: theirs.id }, finalizers: [FINALIZER] });
    w.api.delete(KEY);
    await w.settle(KEY);
    assert.equal(w.api.get(KEY), undefined);
    assert.equal(last(w)?.message, 'nothing to delete');
    assert.equal(w.cloud.objects.get(theirs.id)?.status, 'RUNNING');
  });

  test('in an account that refuses adoption, never deletes an object it only names', async () => {
    const w = open({ policy: { adoption: false } });
    const outside = w.cloud.put({ name: 'x' });
    w.api.create('w', {}, { annotations: { [EXTERNAL_ID]: outside.id }, finalizers: [FINALIZER] });
    w.api.delete(KEY);
    await w.settle(KEY);
    assert.equal(w.api.get(KEY), undefined);
    assert.equal(w.cloud.objects.get(outside.id)?.status, 'RUNNING');
    assert.deepEqual(
      w.cloud.calls.filter((call) => call.id === outside.id),
      [],
      'not even looked up',
    );
  });

  test('in an account that refuses adoption, still deletes the object it made', async () => {
    const w = open({ policy: { adoption: false } });
    const id = await made(w);
    w.api.delete(KEY);
    await w.settle(KEY);
    assert.equal(w.cloud.objects.get(id)?.status, 'TERMINATED');
  });

  test('with a fresh create intent waits for the search, then lets go when it made nothing', async () => {
    const w = open();
    const obj = w.api.create('w', {}, { finalizers: [FINALIZER] });
    // Dated a little ahead (within the clock skew allowed), so that a slow machine still sees it fresh.
    w.api.annotate(KEY, intent(obj.metadata.uid, 'w', Date.now() + 300));
    w.api.delete(KEY);
    assert.deepEqual(await w.reconciler.reconcile(AT), { requeueAfterMs: 20 });
    assert.ok(w.api.get(KEY), 'held while the search waits');
    await w.settle(KEY, 100);
    assert.equal(w.api.get(KEY), undefined);
    assert.equal(last(w)?.reason, 'Deleted');
    assert.equal(last(w)?.message, 'nothing to delete');
    assert.deepEqual(w.cloud.mutations(), []);
  });

  test('with neither an id nor a create intent lets go at once', async () => {
    const w = open();
    w.api.create('w', {}, { finalizers: [FINALIZER] });
    w.api.delete(KEY);
    assert.deepEqual(await w.reconciler.reconcile(AT), {});
    assert.equal(w.api.get(KEY), undefined);
    assert.equal(last(w)?.message, 'nothing to delete');
  });

  test('whose object is already gone lets go without a delete call', async () => {
    const w = open();
    const id = await made(w);
    const widget = w.cloud.objects.get(id);
    assert.ok(widget);
    widget.status = 'TERMINATED';
    w.api.delete(KEY);
    await w.settle(KEY);
    assert.equal(w.api.get(KEY), undefined);
    assert.deepEqual(deletes(w), []);
    assert.equal(last(w)?.message, `Widget ${id} is deleted in the cloud`);
  });
});

describe('a deleted resource with no finalizers at all', () => {
  test('is the apiserver’s to remove, on every path', async () => {
    const w = open({ policy: { allowsNamespace: (namespace) => namespace !== 'ns-b' } });
    const deleted = { deletionTimestamp: new Date().toISOString() };
    w.api.create('w', {}, deleted);
    w.api.create('s', {}, { ...deleted, annotations: { [SKIP_RECONCILE]: 'true' } });
    w.api.create('r', {}, deleted, 'ns-b');
    for (const key of [AT, { namespace: 'ns-a', name: 's' }, { namespace: 'ns-b', name: 'r' }]) {
      assert.deepEqual(await w.reconciler.reconcile(key), {});
    }
    assert.deepEqual(w.recorded.events, []);
    assert.deepEqual(w.api.writes, []);
  });
});

describe('releasing a resource', () => {
  test('removes only the operator’s finalizer', async () => {
    const w = open();
    const outside = w.cloud.put({ name: 'w' });
    w.api.create(
      'w',
      { deletionPolicy: 'Orphan' },
      { annotations: { [EXTERNAL_ID]: outside.id }, finalizers: ['someone/else', FINALIZER] },
    );
    w.api.delete(KEY);
    await w.settle(KEY);
    assert.deepEqual(w.api.get(KEY)?.metadata.finalizers, ['someone/else']);
    assert.equal(last(w)?.reason, 'Orphaned');
  });

  test('with the Delete policy named among others deletes the object', async () => {
    const w = open();
    const id = await made(w, { managementPolicies: ['Observe', 'Create', 'Update', 'Delete'] });
    w.api.delete(KEY);
    await w.settle(KEY);
    assert.equal(w.cloud.objects.get(id)?.status, 'TERMINATED');
  });
});

describe('a skipped resource', () => {
  test('is left alone while it lives', async () => {
    const w = open();
    w.api.create('w', { paused: true }, { annotations: { [SKIP_RECONCILE]: 'true' } });
    assert.deepEqual(await w.reconciler.reconcile(AT), {});
    assert.deepEqual(w.cloud.calls, []);
    assert.deepEqual(w.api.writes, []);
  });

  test('is let go when deleted: Skipped, with no cloud call', async () => {
    const w = open();
    const id = await made(w);
    w.api.annotate(KEY, { [SKIP_RECONCILE]: 'true' });
    w.api.delete(KEY);
    const calls = w.cloud.calls.length;
    assert.deepEqual(await w.reconciler.reconcile(AT), {});
    assert.equal(w.api.get(KEY), undefined);
    assert.equal(last(w)?.reason, 'Skipped');
    assert.equal(last(w)?.message, `${SKIP_RECONCILE} is set: the cloud resource is left as it is`);
    assert.equal(w.cloud.calls.length, calls);
    assert.equal(w.cloud.objects.get(id)?.status, 'RUNNING');
  });

  test('deleted without the finalizer is not touched', async () => {
    const w = open();
    w.api.create(
      'w',
      {},
      { annotations: { [SKIP_RECONCILE]: 'true' }, finalizers: ['someone/else'], deletionTimestamp: 'x' },
    );
    assert.deepEqual(await w.reconciler.reconcile(AT), {});
    assert.deepEqual(w.api.writes, []);
    assert.deepEqual(eventsOf(w), []);
  });

  test('whose release fails is reported on the resource', async () => {
    const w = open();
    await made(w);
    w.api.annotate(KEY, { [SKIP_RECONCILE]: 'true' });
    w.api.delete(KEY);
    w.api.beforePatch = () => {
      throw new ReconcileError('KubernetesApiError', 'apiserver down', { terminal: false });
    };
    await assert.rejects(w.reconciler.reconcile(AT), /apiserver down/);
    w.api.beforePatch = undefined;
    await w.settle(KEY);
    assert.equal(w.api.get(KEY), undefined);
  });

  test('only when the annotation says true', async () => {
    const w = open();
    w.api.create('w', {}, { annotations: { [SKIP_RECONCILE]: 'false' } });
    await w.settle(KEY);
    assert.equal(w.cloud.live().length, 1);
  });
});

describe('a resource of a namespace the account refuses', () => {
  test('is let go when deleted, with no cloud call, saying why', async () => {
    const w = open({ policy: { allowsNamespace: (namespace) => namespace !== 'ns-a' } });
    const outside = w.cloud.put({ name: 'x' });
    w.api.create('w', {}, { annotations: { [EXTERNAL_ID]: outside.id }, finalizers: [FINALIZER] });
    w.api.delete(KEY);
    assert.deepEqual(await w.reconciler.reconcile(AT), {});
    assert.equal(w.api.get(KEY), undefined);
    assert.equal(last(w)?.reason, 'ProviderConfigNotAllowed');
    assert.equal(
      last(w)?.message,
      'namespace ns-a may not use provider config default: nothing in that account was touched for this resource, and nothing is deleted',
    );
    assert.deepEqual(w.cloud.calls, []);
  });

  test('without the finalizer is left to the apiserver', async () => {
    const w = open({ policy: { allowsNamespace: (namespace) => namespace !== 'ns-a' } });
    w.api.create('w', {}, { finalizers: ['someone/else'] });
    w.api.delete(KEY);
    assert.deepEqual(await w.reconciler.reconcile(AT), {});
    assert.deepEqual(eventsOf(w), []);
    assert.ok(w.api.get(KEY));
  });

  test('that lives is refused, not released', async () => {
    const w = open({ policy: { allowsNamespace: (namespace) => namespace !== 'ns-a' } });
    w.api.create('w', {}, { finalizers: [FINALIZER] });
    await w.settle(KEY, { expect: ['ProviderConfigNotAllowed'] });
    assert.equal(conditionOf(w.api.get(KEY), 'Synced')?.reason, 'ProviderConfigNotAllowed');
    assert.deepEqual(w.api.get(KEY)?.metadata.finalizers, [FINALIZER]);
  });
});

describe('a resource the apiserver removed with the finalizer', () => {
  test('deletes its object with no write to the resource', async () => {
    const w = open();
    const id = await made(w);
    const writes = w.api.writes.length;
    w.reconciler.vanished(w.api.vanish(KEY), true);
    await w.settle(KEY);
    assert.equal(w.cloud.objects.get(id)?.status, 'TERMINATED');
    assert.equal(w.api.writes.length, writes);
    assert.deepEqual(
      eventsOf(w)
        .slice(-2)
        .map((event) => event.reason),
      ['Deleting', 'Deleted'],
    );
    assert.deepEqual(await w.reconciler.reconcile(AT), {}, 'done with it');
    assert.equal(deletes(w).length, 1);
  });

  test('without the finalizer is not the operator’s to finalize', async () => {
    const w = open();
    const outside = w.cloud.put({ name: 'w' });
    w.api.create('w', {}, { annotations: { [EXTERNAL_ID]: outside.id } });
    w.reconciler.vanished(w.api.vanish(KEY), true);
    w.api.create('w', {});
    await w.reconciler.reconcile(AT);
    assert.equal(w.cloud.objects.get(outside.id)?.status, 'RUNNING');
    assert.equal(
      w.cloud.calls.filter((call) => call.op === 'create').length,
      1,
      'the new one is made at once',
    );
  });

  test('that a replayed delete announced while it still lives is not finalized, then or later', async () => {
    const w = open();
    const id = await made(w);
    w.reconciler.vanished(w.api.get(KEY) ?? assert.fail('stored'), true);
    await w.settle(KEY);
    assert.equal(w.cloud.objects.get(id)?.status, 'RUNNING');
    // Later it is orphaned and deleted as usual: the replayed state (deletionPolicy Delete) is long forgotten.
    w.api.patchSpec(KEY, { deletionPolicy: 'Orphan' });
    await w.settle(KEY);
    w.api.delete(KEY);
    await w.settle(KEY);
    assert.equal(w.api.get(KEY), undefined);
    await w.settle(KEY);
    assert.equal(w.cloud.objects.get(id)?.status, 'RUNNING');
  });

  test('is finalized before its successor of the same name is reconciled', async () => {
    const w = open();
    const first = await made(w);
    w.reconciler.vanished(w.api.vanish(KEY), true);
    w.api.create('w', {});
    await w.settle(KEY);
    assert.equal(w.cloud.objects.get(first)?.status, 'TERMINATED');
    const second = w.api.get(KEY)?.status?.id;
    assert.ok(typeof second === 'string' && second !== first);
    assert.equal(w.cloud.objects.get(second)?.status, 'RUNNING');
  });

  test('while a create search waits, is retried until it is done', async () => {
    const w = open();
    const obj = w.api.create('w', {}, { finalizers: [FINALIZER] });
    w.api.annotate(KEY, intent(obj.metadata.uid, 'w', Date.now()));
    const madeLate = w.cloud.put({ name: 'w', marker: obj.metadata.uid, createdAt: Date.now() + 1 });
    w.reconciler.vanished(w.api.vanish(KEY), true);
    await w.settle(KEY);
    assert.equal(w.cloud.objects.get(madeLate.id)?.status, 'TERMINATED');
  });

  test('whose spec no longer parses is given up, not retried forever', async () => {
    const w = open();
    w.api.create('w', { size: 'big' }, { finalizers: [FINALIZER] });
    w.reconciler.vanished(w.api.vanish(KEY), true);
    assert.deepEqual(await w.reconciler.reconcile(AT), {});
    assert.deepEqual(await w.reconciler.reconcile(AT), {});
    w.api.create('w', {});
    await w.settle(KEY);
    assert.equal(w.cloud.live().length, 1, 'the next one is its own');
  });

  test('of a namespace the account refuses is forgotten with no cloud call', async () => {
    const w = open({ policy: { allowsNamespace: (namespace) => namespace !== 'ns-a' } });
    const outside = w.cloud.put({ name: 'x' });
    w.api.create('w', {}, { annotations: { [EXTERNAL_ID]: outside.id }, finalizers: [FINALIZER] });
    w.reconciler.vanished(w.api.vanish(KEY), true);
    assert.deepEqual(await w.reconciler.reconcile(AT), {});
    assert.deepEqual(w.cloud.calls, []);
  });

  test('whose delete fails is retried, and deleted then', async () => {
    let failures = 1;
    const w = open({
      adapt: (kind) => ({
        ...kind,
        delete: async (id) => {
          if (failures-- > 0) throw new ReconcileError('CloudUnavailable', 'busy', { terminal: false });
          return kind.delete?.(id);
        },
      }),
    });
    const id = await made(w);
    w.reconciler.vanished(w.api.vanish(KEY), true);
    await assert.rejects(w.reconciler.reconcile(AT), /busy/);
    await w.settle(KEY);
    assert.equal(w.cloud.objects.get(id)?.status, 'TERMINATED');
  });

  test('whose delete is refused for good is given up', async () => {
    const w = open({
      adapt: (kind) => ({
        ...kind,
        delete: async () => {
          throw new ReconcileError('PermissionDenied', 'no', { terminal: true });
        },
      }),
    });
    const id = await made(w);
    w.reconciler.vanished(w.api.vanish(KEY), true);
    assert.deepEqual(await w.reconciler.reconcile(AT), {});
    assert.deepEqual(await w.reconciler.reconcile(AT), {});
    assert.equal(deletes(w).length, 0);
    assert.equal(w.cloud.objects.get(id)?.status, 'RUNNING');
  });
});

describe('a resource protected from deletion', () => {
  const protectedBy = { [DELETION_PROTECTION]: 'true' };

  test('keeps its object and its finalizer, says how to lift it once, and goes once unprotected', async () => {
    const w = open();
    const id = await made(w);
    w.api.annotate(KEY, protectedBy);
    w.api.delete(KEY);
    assert.deepEqual(await w.reconciler.reconcile(AT), {});
    assert.deepEqual(await w.reconciler.reconcile(AT), {});
    assert.deepEqual(deletes(w), []);
    assert.ok(w.api.get(KEY)?.metadata.finalizers?.includes(FINALIZER));
    const synced = conditionOf(w.api.get(KEY), 'Synced');
    assert.equal(synced?.reason, DELETION_PROTECTED);
    assert.match(String(synced?.message), new RegExp(`its cloud Widget ${id} is not deleted`));
    assert.deepEqual(
      eventsOf(w)
        .filter((event) => event.reason === DELETION_PROTECTED)
        .map((event) => event.type),
      ['Warning'],
      'said once',
    );
    w.api.annotate(KEY, { [DELETION_PROTECTION]: null });
    await w.settle(KEY);
    assert.equal(w.api.get(KEY), undefined);
    assert.deepEqual(deletes(w), [{ op: 'delete', id }]);
  });

  test('"false" or any value but "true" protects nothing', async () => {
    const w = open();
    const id = await made(w);
    w.api.annotate(KEY, { [DELETION_PROTECTION]: 'false' });
    w.api.delete(KEY);
    await w.settle(KEY);
    assert.equal(w.api.get(KEY), undefined);
    assert.deepEqual(deletes(w), [{ op: 'delete', id }]);
  });

  test('with deletionPolicy Orphan it goes at once: nothing in the cloud is harmed', async () => {
    const w = open();
    const id = await made(w, { deletionPolicy: 'Orphan' });
    w.api.annotate(KEY, protectedBy);
    w.api.delete(KEY);
    await w.settle(KEY);
    assert.equal(w.api.get(KEY), undefined);
    assert.equal(w.cloud.objects.get(id)?.status, 'RUNNING');
  });

  test('a vanished protected resource leaves its object running', async () => {
    const w = open();
    const id = await made(w);
    w.api.annotate(KEY, protectedBy);
    w.reconciler.vanished(w.api.vanish(KEY), true);
    await w.settle(KEY);
    assert.equal(w.cloud.objects.get(id)?.status, 'RUNNING');
  });
});
