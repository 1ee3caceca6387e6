import assert from 'node:assert/strict';
import { afterEach, test } from 'node:test';
import { CREATE_INTENT, CREATE_NAME, EXTERNAL_ID, FINALIZER } from '../../src/managed/core/annotations.ts';
import { ReconcileError } from '../../src/managed/core/errors.ts';
import { sealIntent } from '../../src/managed/creation/creation.ts';
import { conditionOf } from './fakes.ts';
import { type WidgetWorld, widgetWorld } from './world.ts';

// The generic reconciler as a table, in the manner of crossplane-runtime's managed reconciler tests: each
// row arranges the fakes (cloud, apiserver, clock), reconciles the key until it asks for nothing more, and
// states what must come of it — the cloud calls that change something, the Ready and Synced reasons, the
// events, and whether the resource holds an object. Only what a row names is compared. Multi-step stories
// (races, re-pointing after a loss, limits under a burst) are in reconciler.test.ts.

const KEY = 'ns-a/w';

/** What a reconcile leaves behind, as the rows compare it. */
interface Outcome {
  /** Cloud calls that change something, in order: create, delete, pause, resume. */
  calls: string[];
  ready: string | undefined;
  synced: string | undefined;
  /** Event reasons about the resource, in order. */
  events: string[];
  /** The id in status: `made` when it is an object this row's reconcile created. */
  id: string | undefined;
  /** `held` (finalizer on), `released` (gone, or no finalizer), `absent` (never had one). */
  resource: 'held' | 'released';
  /** Live cloud objects. */
  live: number;
  /** A finite kind's outcome condition that is True. */
  finished: string | undefined;
}

interface Row {
  name: string;
  world?: Parameters<typeof widgetWorld>[0];
  /** Sets the scene; may answer ids to name in `want` (`ids.outside`, ...). */
  arrange(w: WidgetWorld): void | Promise<void>;
  /** After the first settle: what happens next (a clock moved, the resource deleted); settled again. */
  after?: (w: WidgetWorld) => void | Promise<void>;
  /** What must hold after the first settle, before `after`. */
  before?: Partial<Outcome>;
  want: Partial<Outcome>;
  /** The failures the row's turns meet, by reason: any other fails it. */
  fails?: string[];
}

let world: WidgetWorld;
afterEach(async () => world?.close());

/** The create intent an operator holding `key` writes before a create, dated `at`. */
function intent(uid: string, at: number, key = 'signing-key') {
  return { [CREATE_INTENT]: `${at}.${sealIntent(key, uid, at, 'w')}`, [CREATE_NAME]: 'w' };
}

const FIVE_SECONDS_AGO = () => Date.now() - 5_000;

const rows: Row[] = [
  {
    name: 'a new resource: one create, its id, Ready',
    arrange: (w) => void w.api.create('w', { size: 2 }),
    want: { calls: ['create'], ready: 'Running', synced: 'ReconcileSuccess', events: ['Created'], live: 1 },
  },
  {
    name: 'an interrupted create (signed intent): its object is found, never made twice',
    arrange: (w) => {
      const at = FIVE_SECONDS_AGO();
      const obj = w.api.create('w', {}, { finalizers: [FINALIZER] });
      w.api.annotate(KEY, intent(obj.metadata.uid, at));
      w.cloud.put({ name: 'w', marker: obj.metadata.uid, createdAt: at + 10 });
    },
    want: { calls: [], ready: 'Running', events: ['Recovered'], live: 1 },
  },
  {
    name: 'an interrupted create that made nothing: sent again, once',
    arrange: (w) => {
      const obj = w.api.create('w', {}, { finalizers: [FINALIZER] });
      w.api.annotate(KEY, intent(obj.metadata.uid, FIVE_SECONDS_AGO()));
    },
    want: { calls: ['create'], ready: 'Running', live: 1 },
  },
  {
    name: "a forged intent: another's object is not taken over; the resource makes its own",
    arrange: (w) => {
      const at = FIVE_SECONDS_AGO();
      const obj = w.api.create('w', {});
      w.api.annotate(KEY, intent(obj.metadata.uid, at, 'guessed-key'));
      w.cloud.put({ name: 'w', createdAt: at + 10 });
    },
    want: { calls: ['create'], ready: 'Running', live: 2 },
  },
  {
    name: 'adoption allowed: late-initialised, nothing changed',
    arrange: (w) => {
      const outside = w.cloud.put({ name: 'by-hand', status: 'PAUSED', size: 4 });
      w.api.create('w', {}, { annotations: { [EXTERNAL_ID]: outside.id } });
    },
    want: { calls: [], ready: 'Paused', synced: 'ReconcileSuccess', resource: 'held', live: 1 },
  },
  {
    name: 'adoption refused by the account: no cloud call',
    world: { policy: { adoption: false } },
    arrange: (w) => {
      const outside = w.cloud.put({ name: 'x' });
      w.api.create('w', {}, { annotations: { [EXTERNAL_ID]: outside.id } });
    },
    fails: ['AdoptionNotAllowed'],
    want: { calls: [], synced: 'AdoptionNotAllowed', id: undefined },
  },
  {
    name: 'already managed: an id another resource proved is refused',
    arrange: async (w) => {
      w.api.create('owner', {}, {}, 'ns-b');
      await w.settle('ns-b/owner');
      w.cloud.calls.length = 0;
      const id = String(w.api.get('ns-b/owner')?.status?.id);
      w.api.create('w', { paused: true }, { annotations: { [EXTERNAL_ID]: id } });
    },
    fails: ['AlreadyManaged'],
    want: { calls: [], synced: 'AlreadyManaged', id: undefined, events: ['AlreadyManaged'] },
  },
  {
    name: 're-pointed id: refused while its object lives; the object is kept',
    arrange: async (w) => {
      w.api.create('w', {});
      await w.settle(KEY);
      w.cloud.calls.length = 0;
      const other = w.cloud.put({ name: 'other' });
      w.api.annotate(KEY, { [EXTERNAL_ID]: other.id });
    },
    fails: ['ExternalIdChanged'],
    want: { calls: [], synced: 'ExternalIdChanged', live: 2 },
  },
  {
    name: 'observe only: a spec that differs sends nothing',
    arrange: (w) => {
      const outside = w.cloud.put({ name: 'seen', status: 'RUNNING' });
      w.api.create(
        'w',
        { paused: true, managementPolicies: ['Observe'] },
        { annotations: { [EXTERNAL_ID]: outside.id } },
      );
    },
    want: { calls: [], ready: 'Running', synced: 'ReconcileSuccess' },
  },
  {
    name: 'drift in a field the cloud cannot change: Drifted, no re-create',
    arrange: async (w) => {
      w.api.create('w', { size: 1 });
      await w.settle(KEY);
      w.cloud.calls.length = 0;
      w.api.patchSpec(KEY, { size: 8 });
    },
    want: { calls: [], synced: 'Drifted', events: ['Drifted'], live: 1 },
  },
  {
    name: 'an update the cloud can make: one step (pause)',
    arrange: async (w) => {
      w.api.create('w', {});
      await w.settle(KEY);
      w.cloud.calls.length = 0;
      w.api.patchSpec(KEY, { paused: true });
    },
    want: { calls: ['pause'], ready: 'Paused', events: ['Pausing'] },
  },
  {
    name: 'Delete: the object is deleted, then the resource let go',
    arrange: async (w) => {
      w.api.create('w', {});
      await w.settle(KEY);
      w.cloud.calls.length = 0;
      w.api.delete(KEY);
    },
    want: { calls: ['delete'], resource: 'released', live: 0, events: ['Deleting', 'Deleted'] },
  },
  {
    name: 'Orphan: the resource let go, the object left running',
    arrange: async (w) => {
      w.api.create('w', { deletionPolicy: 'Orphan' });
      await w.settle(KEY);
      w.cloud.calls.length = 0;
      w.api.delete(KEY);
    },
    want: { calls: [], resource: 'released', live: 1, events: ['Orphaned'] },
  },
  {
    name: 'preempted with Recreate: the preemption recorded, the object deleted, then replaced once the moved clock passes the backoff',
    arrange: async (w) => {
      w.api.create('w', { spot: true, recoveryPolicy: 'Recreate' });
      await w.settle(KEY);
      w.cloud.calls.length = 0;
      const widget = w.cloud.live()[0];
      if (widget) widget.status = 'FAILED';
    },
    before: { calls: ['delete'], ready: 'Preempted' },
    after: (w) => w.clock.advance(10_000),
    want: {
      calls: ['delete', 'create'],
      ready: 'Running',
      live: 1,
      events: ['Preempted', 'Recovering', 'Created'],
    },
  },
  {
    name: 'preempted with Never: left down, counted once',
    arrange: async (w) => {
      w.api.create('w', { spot: true });
      await w.settle(KEY);
      w.cloud.calls.length = 0;
      const widget = w.cloud.live()[0];
      if (widget) widget.status = 'FAILED';
    },
    want: { calls: [], ready: 'Preempted', events: ['Preempted'] },
  },
  {
    name: 'a transient failure is retried',
    arrange: (w) => {
      w.api.create('w', {});
      w.cloud.failNextCreate = new ReconcileError('CloudUnavailable', 'try later', { terminal: false });
    },
    fails: ['CloudUnavailable'],
    want: { calls: ['create', 'create'], synced: 'ReconcileSuccess', live: 1 },
  },
  {
    name: 'a terminal failure is reported and not retried',
    arrange: (w) => {
      w.api.create('w', {});
      w.cloud.failNextCreate = new ReconcileError('CloudRejected', 'no such widget type', { terminal: true });
    },
    after: async (w) => void (await w.reconciler.reconcile({ namespace: 'ns-a', name: 'w' })),
    fails: ['CloudRejected'],
    want: { calls: ['create'], synced: 'CloudRejected', live: 0, events: ['CloudRejected'] },
  },
  {
    name: 'a finite kind: finished, never read again, never made again',
    world: {
      adapt: (kind) => ({
        ...kind,
        finite: { outcomeOf: (phase) => (phase === 'FAILED' ? 'Failed' : undefined) },
      }),
    },
    arrange: async (w) => {
      w.api.create('w', {});
      await w.settle(KEY);
      w.cloud.calls.length = 0;
      const widget = w.cloud.live()[0];
      if (widget) widget.status = 'FAILED';
    },
    // Gone from the cloud afterwards: a finished resource neither notices nor makes it again.
    after: (w) => w.cloud.objects.clear(),
    want: { calls: [], finished: 'Failed' },
  },
  {
    name: 'a connection Secret it does not own: refused, the status still truthful',
    arrange: (w) => {
      w.api.secrets.set('ns-a/conn', { data: { mine: 'not yours' }, owner: 'someone-else' });
      w.api.create('w', { writeConnectionSecretToRef: { name: 'conn' } });
    },
    want: { calls: ['create'], ready: 'Running', synced: 'ConnectionSecretNotOwned', live: 1 },
  },
  {
    name: 'the leak: a resource removed during its create has what the create made deleted',
    arrange: (w) => {
      w.api.create('w', {});
      w.cloud.duringCreate = () => {
        w.api.delete(KEY);
        w.api.objects.delete(KEY);
      };
    },
    fails: ['ResourceGone'],
    want: { calls: ['create', 'delete'], live: 0, resource: 'released' },
  },
];

function outcomeOf(w: WidgetWorld): Outcome {
  const stored = w.api.get(KEY);
  return {
    calls: w.cloud.mutations().map((call) => call.op),
    ready: conditionOf(stored, 'Ready')?.reason,
    synced: conditionOf(stored, 'Synced')?.reason,
    events: w.reasonsOf(KEY),
    id: stored?.status?.id === undefined ? undefined : String(stored.status.id),
    resource: stored?.metadata.finalizers?.includes(FINALIZER) ? 'held' : 'released',
    live: w.cloud.live().length,
    finished: ['Complete', 'Failed'].find((type) => conditionOf(stored, type)?.status === 'True'),
  };
}

for (const row of rows) {
  test(row.name, async () => {
    world = widgetWorld(row.world);
    const w = world;
    await row.arrange(w);
    const eventsBefore = w.reasonsOf(KEY).length;
    const expect = row.fails ?? [];
    await w.settle(KEY, { expect });
    if (row.before) assert.deepEqual(compare(w, row.before, eventsBefore), row.before, 'before `after`');
    if (row.after) {
      await row.after(w);
      await w.settle(KEY, { expect });
    }
    assert.deepEqual(compare(w, row.want, eventsBefore), row.want);
  });
}

/**
 * The outcome's fields that `want` names; events from the arrangement on, every one in order: an event
 * a row does not expect, or one said twice, fails it.
 */
function compare(w: WidgetWorld, want: Partial<Outcome>, eventsBefore: number): Partial<Outcome> {
  const outcome = outcomeOf(w);
  const got = { ...outcome, events: outcome.events.slice(eventsBefore) };
  return Object.fromEntries(Object.keys(want).map((key) => [key, got[key as keyof Outcome]]));
}
