import assert from 'node:assert/strict';
import { afterEach, describe, mock, test } from 'node:test';
import { pino } from 'pino';
import { RequestValidationError, TransportError } from '../../src/api/errors.ts';
import { KubeApiError } from '../../src/kube/client.ts';
import { CloudCache } from '../../src/managed/cloud-cache/cloud-cache.ts';
import {
  CREATE_INTENT,
  CREATE_NAME,
  CREATE_PLACEMENT,
  EXTERNAL_ID,
  FINALIZER,
  LATE_INITIALIZED,
  OWNER_ENV,
} from '../../src/managed/core/annotations.ts';
import { ReconcileError, StaleCopyError } from '../../src/managed/core/errors.ts';
import type { ActContext, ExternalKind, ManagedObject } from '../../src/managed/core/external-kind.ts';
import { NotLeaderError } from '../../src/managed/core/fence.ts';
import type { Metadata } from '../../src/managed/core/writer.ts';
import { Creation, sealIntent } from '../../src/managed/creation/creation.ts';
import { MovableClock } from '../support/clock.ts';
import { FakeApi, FakeCloud, type Widget, type WidgetSpec } from './fakes.ts';

// Crash-safe creation on small fakes: the fake cloud's widget kind, a real CloudCache over it, the
// in-memory apiserver as store and writer.

const KEY = 'ns-a/w';
const GRACE = 60_000;
const SKEW = 1_000;

interface Setup {
  cloud: FakeCloud;
  api: FakeApi;
  cache: CloudCache<Widget>;
  creation: Creation<WidgetSpec, Widget>;
  adapter: ExternalKind<WidgetSpec, Widget>;
  clock: MovableClock;
}

const caches: Array<CloudCache<Widget>> = [];
afterEach(() => {
  for (const cache of caches.splice(0)) cache.stop();
  mock.timers.reset();
});

function setup(
  options: {
    graceMs?: number;
    keys?: string[];
    /** Flows with the wall clock unless a test brings one that stands still. */
    clock?: MovableClock;
    cloud?: FakeCloud;
    api?: FakeApi;
    adapter?: (base: ExternalKind<WidgetSpec, Widget>) => ExternalKind<WidgetSpec, Widget>;
  } = {},
): Setup {
  const cloud = options.cloud ?? new FakeCloud();
  const api = options.api ?? new FakeApi();
  const base = cloud.kind();
  const adapter = options.adapter ? options.adapter(base) : base;
  const clock = options.clock ?? new MovableClock({ flowing: true });
  const cache = new CloudCache<Widget>(adapter, {
    intervalMs: 60_000,
    minIntervalMs: 0,
    onChange: () => {},
    clock,
    log: pino({ level: 'silent' }),
  });
  caches.push(cache);
  const keys = options.keys ?? ['key-1'];
  const creation = new Creation<WidgetSpec, Widget>(adapter, cache, api.store, api.writer, {
    graceMs: options.graceMs ?? GRACE,
    skewMs: SKEW,
    intentKeys: () => keys,
    events: { event: () => {}, forget: () => {} },
    clock,
  });
  return { cloud, api, cache, creation, adapter, clock };
}

function widgetOf(obj: ManagedObject<unknown> | undefined): ManagedObject<WidgetSpec> {
  assert.ok(obj, 'the resource exists');
  return { ...obj, spec: obj.spec as WidgetSpec };
}

function ctxOf(mr: ManagedObject<unknown>): ActContext {
  return {
    resolveEnv: async () => [],
    secretsChanged: () => false,
    ownerMarker: { key: OWNER_ENV, value: mr.metadata.uid },
  };
}

function intentOf(uid: string, name: string, at: number, key = 'key-1') {
  return { [CREATE_INTENT]: `${at}.${sealIntent(key, uid, at, name)}`, [CREATE_NAME]: name };
}

/** A resource whose annotations hold `annotations`, as read from the apiserver. */
function resource(
  api: FakeApi,
  annotations: (uid: string) => Record<string, string> = () => ({}),
  spec: WidgetSpec = {},
  metadata: Partial<Metadata> = {},
): ManagedObject<WidgetSpec> {
  const made = api.create('w', spec as Record<string, unknown>, metadata);
  api.annotate(KEY, annotations(made.metadata.uid));
  return widgetOf(api.get(KEY));
}

const creates = (cloud: FakeCloud) => cloud.calls.filter((call) => call.op === 'create').length;
const lists = (cloud: FakeCloud) => cloud.calls.filter((call) => call.op === 'list').length;

describe('obtain on a new resource', () => {
  test('writes a signed intent with the finalizer first, creates once and records the id and the fill', async () => {
    const { api, cloud, creation } = setup({ keys: ['key-1', 'key-0'] });
    const mr = resource(api, undefined, { size: 3 });
    assert.equal(creation.writesIntent(mr), true);
    const before = Date.now();
    const got = await creation.obtain(mr, ctxOf(mr), (widget) => ({ size: widget.size, paused: false }));
    const after = Date.now();
    assert.equal(got.kind, 'have');
    assert.ok(got.kind === 'have');
    assert.equal(got.created, true);
    assert.equal(got.cloud.name, 'w');
    assert.deepEqual(got.filled, { size: 3, paused: false });
    assert.equal(creates(cloud), 1);

    const [first, second] = api.writes.map((write) => JSON.parse(write.what.slice('metadata '.length)));
    const [at = '', seal] = String(first.annotations[CREATE_INTENT]).split('.');
    assert.ok(Number(at) >= before && Number(at) <= after, 'the intent is dated when it was written');
    assert.equal(seal, sealIntent('key-1', mr.metadata.uid, Number(at), 'w'), 'signed with the first key');
    assert.equal(seal?.length, 22);
    assert.equal(first.annotations[CREATE_NAME], 'w');
    assert.deepEqual(first.finalizers, [FINALIZER]);
    assert.equal(first.ifUnchanged, true);
    assert.deepEqual(second, {
      annotations: {
        [EXTERNAL_ID]: got.cloud.id,
        [CREATE_INTENT]: null,
        [CREATE_NAME]: null,
        [CREATE_PLACEMENT]: null,
        [LATE_INITIALIZED]: 'paused,size',
      },
      spec: { size: 3, paused: false },
      ifUnchanged: true,
    });

    const stored = api.get(KEY);
    assert.equal(stored?.metadata.annotations?.[EXTERNAL_ID], got.cloud.id);
    assert.equal(stored?.metadata.annotations?.[CREATE_INTENT], undefined);
    assert.deepEqual(stored?.spec, { size: 3, paused: false });
    assert.equal(got.metadata.resourceVersion, stored?.metadata.resourceVersion);
    assert.equal(creation.recordedHere(mr.metadata.uid, got.cloud.id), true);
    assert.equal(creation.recordedHere(mr.metadata.uid, 'other'), false);
  });

  test('the intent keeps the finalizers it finds and adds ours only when missing', async () => {
    const { api, creation } = setup();
    api.create('w', {}, { finalizers: ['other/finalizer'] });
    const mr = widgetOf(api.get(KEY));
    await creation.obtain(mr, ctxOf(mr));
    assert.deepEqual(JSON.parse(api.writes[0]?.what.slice(9) ?? '').finalizers, [
      'other/finalizer',
      FINALIZER,
    ]);

    const again = setup();
    again.api.create('w', {}, { finalizers: [FINALIZER] });
    const held = widgetOf(again.api.get(KEY));
    await again.creation.obtain(held, ctxOf(held));
    assert.equal(JSON.parse(again.api.writes[0]?.what.slice(9) ?? '').finalizers, undefined);
  });

  test('the created object is in the cache at once, before any list', async () => {
    const { api, cache, creation, cloud } = setup();
    const mr = resource(api);
    const got = await creation.obtain(mr, ctxOf(mr));
    assert.ok(got.kind === 'have');
    assert.deepEqual(
      cache.objects().map((widget) => widget.id),
      [got.cloud.id],
    );
    assert.equal(lists(cloud), 0);
  });

  test('a created object is recorded without a fill, and an empty fill reports {}', async () => {
    const { api, creation } = setup();
    const mr = resource(api);
    const got = await creation.obtain(mr, ctxOf(mr));
    assert.ok(got.kind === 'have');
    assert.equal(got.filled, undefined);
    assert.deepEqual(JSON.parse(api.writes[1]?.what.slice(9) ?? '').spec, undefined);

    const other = setup();
    const empty = resource(other.api);
    const filled = await other.creation.obtain(empty, ctxOf(empty), () => ({}));
    assert.ok(filled.kind === 'have');
    assert.deepEqual(filled.filled, {});
    assert.equal(JSON.parse(other.api.writes[1]?.what.slice(9) ?? '').ifUnchanged, undefined);
  });

  test('a new create after a refused one writes an intent naming the resource as it is now', async () => {
    const { api, cloud, creation } = setup();
    const mr = resource(api);
    cloud.failNextCreate = new ReconcileError('CloudRejected', 'no', { terminal: false });
    await assert.rejects(creation.obtain(mr, ctxOf(mr)), /no/);
    api.patchSpec(KEY, { name: 'renamed' });
    const renamed = widgetOf(api.get(KEY));
    const got = await creation.obtain(renamed, ctxOf(renamed));
    assert.ok(got.kind === 'have');
    assert.equal(got.cloud.name, 'renamed');
    assert.equal(creates(cloud), 2);
    assert.equal(lists(cloud), 0, 'its own refused create needs no search');
    const third = JSON.parse(api.writes[1]?.what.slice(9) ?? '');
    assert.equal(third.annotations[CREATE_NAME], 'renamed');
  });
});

describe('intentAt', () => {
  test('an intent the operator signed counts; writesIntent is then false', () => {
    const { api, creation } = setup({ keys: ['key-1', 'key-0'] });
    const at = Date.now() - 5_000;
    const mr = resource(api, (uid) => intentOf(uid, 'w', at, 'key-0'));
    assert.equal(creation.intentAt(mr), at);
    assert.equal(creation.writesIntent(mr), false);
    const first = resource(new FakeApi(), (uid) => intentOf(uid, 'w', at, 'key-1'));
    assert.equal(creation.intentAt(first), at);
  });

  test('refuses an intent without a seal, with a bad seal, or sealed for another resource or name', () => {
    const { api, creation } = setup();
    const at = Date.now() - 5_000;
    const unsealed = resource(api, () => ({ [CREATE_INTENT]: String(at), [CREATE_NAME]: 'w' }));
    assert.equal(creation.intentAt(unsealed), undefined);
    assert.equal(creation.writesIntent(unsealed), true);
    const other = new FakeApi();
    const forged = resource(other, (uid) => {
      const good = sealIntent('key-1', uid, at, 'w');
      const bad = `${good.slice(0, 21)}${good.endsWith('A') ? 'B' : 'A'}`;
      return { [CREATE_INTENT]: `${at}.${bad}`, [CREATE_NAME]: 'w' };
    });
    assert.equal(creation.intentAt(forged), undefined);
    const short = resource(new FakeApi(), () => ({ [CREATE_INTENT]: `${at}.abc`, [CREATE_NAME]: 'w' }));
    assert.equal(creation.intentAt(short), undefined);
    const elsewhere = resource(new FakeApi(), () => intentOf('uid-someone-else', 'w', at));
    assert.equal(creation.intentAt(elsewhere), undefined);
    const renamed = resource(new FakeApi(), (uid) => ({ ...intentOf(uid, 'w', at), [CREATE_NAME]: 'x' }));
    assert.equal(creation.intentAt(renamed), undefined);
    const wrongKey = resource(new FakeApi(), (uid) => intentOf(uid, 'w', at, 'stolen'));
    assert.equal(creation.intentAt(wrongKey), undefined);
  });

  test('an intent without a name annotation is sealed over the empty name', () => {
    const { api, creation } = setup();
    const at = Date.now() - 5_000;
    const mr = resource(api, (uid) => ({ [CREATE_INTENT]: `${at}.${sealIntent('key-1', uid, at, '')}` }));
    assert.equal(creation.intentAt(mr), at);
  });

  test('refuses a date that is not a number or is empty, even sealed', () => {
    const { api, creation } = setup();
    const nan = resource(api, (uid) => ({
      [CREATE_INTENT]: `soon.${sealIntent('key-1', uid, Number.NaN, 'w')}`,
      [CREATE_NAME]: 'w',
    }));
    assert.equal(creation.intentAt(nan), undefined);
    const empty = resource(new FakeApi(), (uid) => ({
      [CREATE_INTENT]: `.${sealIntent('key-1', uid, 0, 'w')}`,
      [CREATE_NAME]: 'w',
    }));
    assert.equal(creation.intentAt(empty), undefined);
  });

  test('refuses a date later than clock skew allows, and accepts one just within it', () => {
    const { creation, clock } = setup({ clock: new MovableClock() });
    const now = clock.now();
    const within = resource(new FakeApi(), (uid) => intentOf(uid, 'w', now + SKEW));
    assert.equal(creation.intentAt(within), now + SKEW);
    const beyond = resource(new FakeApi(), (uid) => intentOf(uid, 'w', now + SKEW + 1));
    assert.equal(creation.intentAt(beyond), undefined);
    const farAhead = resource(new FakeApi(), (uid) => intentOf(uid, 'w', now + 86_400_000));
    assert.equal(creation.intentAt(farAhead), undefined);
  });
});

describe('find', () => {
  test("another process's intent within the grace waits for what remains of it, and obtain creates nothing", async () => {
    const { api, cloud, creation, clock } = setup({ clock: new MovableClock() });
    const at = clock.now();
    const mr = resource(api, (uid) => intentOf(uid, 'w', at));
    assert.deepEqual(await creation.find(mr, at, ctxOf(mr)), { kind: 'wait', ms: GRACE });
    clock.advance(10_000);
    assert.deepEqual(await creation.find(mr, at, ctxOf(mr)), { kind: 'wait', ms: GRACE - 10_000 });
    const obtained = await creation.obtain(mr, ctxOf(mr));
    assert.equal(obtained.kind, 'wait');
    assert.equal(creates(cloud), 0);
    assert.equal(lists(cloud), 0);
  });

  test('searches with a list that starts now once the grace has passed exactly', async () => {
    const { api, cloud, creation, clock } = setup({ clock: new MovableClock() });
    const at = clock.now();
    clock.advance(GRACE);
    const mr = resource(api, (uid) => intentOf(uid, 'w', at));
    const made = cloud.put({ name: 'w', marker: mr.metadata.uid, createdAt: at + 5 });
    const found = await creation.find(mr, at, ctxOf(mr));
    assert.deepEqual(found, { kind: 'found', cloud: made });
    assert.equal(lists(cloud), 1);
  });

  test('adopts what an interrupted create made, once the grace has passed, and creates nothing', async () => {
    const { api, cloud, creation } = setup();
    const at = Date.now() - GRACE - 1;
    const mr = resource(api, (uid) => intentOf(uid, 'w', at));
    const made = cloud.put({ name: 'w', marker: mr.metadata.uid, createdAt: at + 10 });
    const got = await creation.obtain(mr, ctxOf(mr), (widget) => ({ size: widget.size }));
    assert.ok(got.kind === 'have');
    assert.equal(got.created, false);
    assert.equal(got.cloud.id, made.id);
    assert.deepEqual(got.filled, { size: 1 });
    assert.equal(creates(cloud), 0);
    assert.equal(api.get(KEY)?.metadata.annotations?.[EXTERNAL_ID], made.id);
    assert.equal(creation.recordedHere(mr.metadata.uid, made.id), true);
  });

  test('creates when a trusted search finds nothing', async () => {
    const { api, cloud, creation } = setup();
    const at = Date.now() - GRACE - 1;
    const mr = resource(api, (uid) => intentOf(uid, 'w', at));
    const got = await creation.obtain(mr, ctxOf(mr));
    assert.ok(got.kind === 'have');
    assert.equal(got.created, true);
    assert.equal(creates(cloud), 1);
    assert.equal(lists(cloud), 1);
  });

  describe('candidates', () => {
    const at = () => Date.now() - GRACE - 1;

    async function search(
      place: (cloud: FakeCloud, mr: ManagedObject<WidgetSpec>, intentAt: number) => void,
      options: Parameters<typeof setup>[0] & {
        metadata?: Partial<Metadata>;
        more?: (api: FakeApi) => void;
      } = {},
    ) {
      const s = setup(options);
      const intentAt = at();
      const mr = resource(s.api, (uid) => intentOf(uid, 'w', intentAt), {}, options.metadata ?? {});
      options.more?.(s.api);
      place(s.cloud, mr, intentAt);
      const found = await s.creation.find(mr, intentAt, ctxOf(mr));
      assert.equal(found.kind, 'found');
      return found.kind === 'found' ? found.cloud : undefined;
    }

    test('a gone object is none', async () => {
      const found = await search((cloud, mr, intentAt) =>
        cloud.put({ name: 'w', marker: mr.metadata.uid, createdAt: intentAt, status: 'TERMINATED' }),
      );
      assert.equal(found, undefined);
    });

    test('an object older than the intent, beyond clock skew, is none; one just within skew is', async () => {
      const metadata = { creationTimestamp: new Date(Date.now() - 2 * GRACE).toISOString() };
      const older = await search(
        (cloud, mr, intentAt) =>
          cloud.put({ name: 'w', marker: mr.metadata.uid, createdAt: intentAt - SKEW - 1 }),
        { metadata },
      );
      assert.equal(older, undefined);
      const within = await search(
        (cloud, mr, intentAt) =>
          cloud.put({ name: 'w', marker: mr.metadata.uid, createdAt: intentAt - SKEW }),
        { metadata },
      );
      assert.equal(within?.name, 'w');
    });

    test('without a creation timestamp, the intent alone dates the search', async () => {
      const older = await search(
        (cloud, mr, intentAt) =>
          cloud.put({ name: 'w', marker: mr.metadata.uid, createdAt: intentAt - SKEW - 1 }),
        { metadata: { creationTimestamp: undefined } },
      );
      assert.equal(older, undefined);
      const within = await search(
        (cloud, mr, intentAt) => cloud.put({ name: 'w', marker: mr.metadata.uid, createdAt: intentAt }),
        { metadata: { creationTimestamp: undefined } },
      );
      assert.equal(within?.name, 'w');
    });

    test('an object older than the resource itself is none, though younger than its intent', async () => {
      const resourceAt = Date.now() - 5_000;
      const found = await search(
        (cloud, mr) => cloud.put({ name: 'w', marker: mr.metadata.uid, createdAt: resourceAt - SKEW - 1 }),
        { metadata: { creationTimestamp: new Date(resourceAt).toISOString() } },
      );
      assert.equal(found, undefined);
      const after = await search(
        (cloud, mr) => cloud.put({ name: 'w', marker: mr.metadata.uid, createdAt: resourceAt }),
        { metadata: { creationTimestamp: new Date(resourceAt).toISOString() } },
      );
      assert.equal(after?.name, 'w');
    });

    test('an object another resource proved its own is none; one it merely names, or ours proved, is', async () => {
      const proved = await search(
        (cloud, mr, intentAt) => cloud.put({ name: 'w', marker: mr.metadata.uid, createdAt: intentAt }),
        {
          more: (api) => {
            api.create('other', {});
            api.setStatus('ns-a/other', { id: '100' });
          },
        },
      );
      assert.equal(proved, undefined);
      const named = await search(
        (cloud, mr, intentAt) => cloud.put({ name: 'w', marker: mr.metadata.uid, createdAt: intentAt }),
        {
          more: (api) => {
            api.create('other', {});
            api.annotate('ns-a/other', { [EXTERNAL_ID]: '100' });
          },
        },
      );
      assert.equal(named?.id, '100');
      const ours = await search(
        (cloud, mr, intentAt) => cloud.put({ name: 'w', marker: mr.metadata.uid, createdAt: intentAt }),
        { more: (api) => api.setStatus(KEY, { id: '100' }) },
      );
      assert.equal(ours?.id, '100');
    });

    test('an object marked for another resource is none, even if the kind would call it ours', async () => {
      const found = await search(
        (cloud, _mr, intentAt) => cloud.put({ name: 'w', marker: 'uid-other', createdAt: intentAt }),
        { adapter: (base) => ({ ...base, identity: { ...base.identity, isOwnCreate: async () => true } }) },
      );
      assert.equal(found, undefined);
    });

    test('an object without a marker is the kind’s to judge', async () => {
      const byName = (base: ExternalKind<WidgetSpec, Widget>): ExternalKind<WidgetSpec, Widget> => ({
        ...base,
        identity: { ...base.identity, isOwnCreate: async (mr, widget) => widget.name === mr.metadata.name },
      });
      const found = await search((cloud, _mr, intentAt) => cloud.put({ name: 'w', createdAt: intentAt }), {
        adapter: byName,
      });
      assert.equal(found?.name, 'w');
      const noMarkers = await search(
        (cloud, _mr, intentAt) => cloud.put({ name: 'w', createdAt: intentAt }),
        {
          adapter: (base) => {
            const judged = byName(base);
            const { markerOf: _m, ...rest } = judged.identity ?? { isOwnCreate: async () => false };
            return { ...judged, identity: rest };
          },
        },
      );
      assert.equal(noMarkers?.name, 'w');
    });

    test('an object the kind does not call its own is none, and the search goes on past it', async () => {
      const found = await search((cloud, mr, intentAt) => {
        cloud.put({ name: 'someone-else', marker: mr.metadata.uid, createdAt: intentAt });
        cloud.put({ name: 'w', marker: mr.metadata.uid, createdAt: intentAt });
      });
      assert.equal(found?.name, 'w');
      assert.equal(found?.id, '101');
      const none = await search((cloud, mr, intentAt) =>
        cloud.put({ name: 'someone-else', marker: mr.metadata.uid, createdAt: intentAt }),
      );
      assert.equal(none, undefined);
    });
  });

  test('a kind whose ids the client chooses finds the object by one get, without waiting for the grace', async () => {
    const cloud = new FakeCloud();
    const { api, creation } = setup({
      cloud,
      adapter: (base) => ({
        ...base,
        identity: {
          ...base.identity,
          isOwnCreate: base.identity?.isOwnCreate ?? (async () => false),
          ownId: () => '100',
        },
      }),
    });
    const at = Date.now();
    const mr = resource(api, (uid) => intentOf(uid, 'w', at));
    assert.deepEqual(await creation.find(mr, at, ctxOf(mr)), { kind: 'found', cloud: undefined });
    const made = cloud.put({ name: 'w' });
    assert.deepEqual(await creation.find(mr, at, ctxOf(mr)), { kind: 'found', cloud: made });
    assert.deepEqual(
      cloud.calls.map((call) => call.op),
      ['get', 'get'],
    );
  });
});

describe('what this process remembers of its own intents', () => {
  async function refusedOnce(error: Error, options: { made?: boolean } = {}) {
    const s = setup();
    const mr = resource(s.api);
    if (options.made) {
      s.cloud.duringCreate = () => {
        s.cloud.duringCreate = undefined;
        throw error;
      };
    } else {
      s.cloud.failNextCreate = error;
    }
    await assert.rejects(s.creation.obtain(mr, ctxOf(mr)));
    const stored = widgetOf(s.api.get(KEY));
    const at = s.creation.intentAt(stored);
    assert.ok(at !== undefined);
    return { ...s, stored, at };
  }

  for (const [name, error] of [
    ['a ReconcileError', new ReconcileError('MissingSecret', 'no secret', { terminal: false })],
    ['a NotLeaderError', new NotLeaderError('Widget')],
    ['a GpuCloudError that provably did not act', new RequestValidationError('widgets.create', [])],
  ] as const) {
    test(`a create refused by ${name} proves nothing was made: no search, no wait`, async () => {
      const { creation, stored, at, cloud } = await refusedOnce(error);
      assert.deepEqual(await creation.find(stored, at, ctxOf(stored)), { kind: 'found', cloud: undefined });
      assert.equal(lists(cloud), 0);
    });
  }

  for (const [name, error] of [
    ['a plain failure', new Error('socket hang up')],
    [
      'a transport error that may have reached the cloud',
      new TransportError({
        operation: 'widgets.create',
        creates: true,
        reason: 'timeout',
        detail: 'timed out',
        origin: 'http://cloud',
        attempts: 1,
        mayHaveTakenEffect: true,
      }),
    ],
  ] as const) {
    test(`after ${name} the create is ambiguous: searched at once (no grace for our own), and adopted`, async () => {
      const { creation, stored, at, cloud, api } = await refusedOnce(error, { made: true });
      const found = await creation.find(stored, at, ctxOf(stored));
      assert.equal(found.kind, 'found');
      assert.equal(found.kind === 'found' ? found.cloud?.name : undefined, 'w');
      assert.equal(lists(cloud), 1);
      const got = await creation.obtain(stored, ctxOf(stored));
      assert.ok(got.kind === 'have');
      assert.equal(got.created, false);
      assert.equal(creates(cloud), 1);
      assert.equal(api.get(KEY)?.metadata.annotations?.[EXTERNAL_ID], got.cloud.id);
    });
  }

  test('a create whose id could not be recorded is recorded on the next try, never created again', async () => {
    const { api, cloud, creation } = setup();
    const mr = resource(api);
    let writes = 0;
    api.beforePatch = () => {
      writes += 1;
      if (writes === 2) throw new KubeApiError('PATCH', KEY, 500, 'InternalError', 'etcd is sad');
    };
    await assert.rejects(creation.obtain(mr, ctxOf(mr)), /etcd is sad/);
    const stored = widgetOf(api.get(KEY));
    const at = creation.intentAt(stored);
    assert.ok(at !== undefined);
    const found = await creation.find(stored, at, ctxOf(stored));
    assert.equal(found.kind === 'found' ? found.cloud?.id : undefined, '100');
    const got = await creation.obtain(stored, ctxOf(stored));
    assert.ok(got.kind === 'have');
    assert.equal(got.created, false);
    assert.equal(got.cloud.id, '100');
    assert.equal(creates(cloud), 1);
    assert.equal(lists(cloud), 0);
    assert.equal(api.get(KEY)?.metadata.annotations?.[EXTERNAL_ID], '100');
  });

  test('what this process remembers is for its own intent only: a later date is searched as anyone’s', async () => {
    const { api, creation } = setup();
    const mr = resource(api);
    let writes = 0;
    api.beforePatch = () => {
      writes += 1;
      if (writes === 2) throw new KubeApiError('PATCH', KEY, 500, 'InternalError', 'etcd is sad');
    };
    await assert.rejects(creation.obtain(mr, ctxOf(mr)));
    const stored = widgetOf(api.get(KEY));
    const at = creation.intentAt(stored);
    assert.ok(at !== undefined);
    assert.equal((await creation.find(stored, at + 1, ctxOf(stored))).kind, 'wait');

    const refused = setup();
    const other = resource(refused.api);
    refused.cloud.failNextCreate = new ReconcileError('CloudRejected', 'no', { terminal: false });
    await assert.rejects(refused.creation.obtain(other, ctxOf(other)));
    const read = widgetOf(refused.api.get(KEY));
    const written = refused.creation.intentAt(read);
    assert.ok(written !== undefined);
    assert.equal((await refused.creation.find(read, written + 1, ctxOf(read))).kind, 'wait');
  });

  test('an earlier date than this process wrote is a stale copy within its grace, and anyone’s after it', async () => {
    const clock = new MovableClock();
    const { api, creation, cloud } = setup({ clock });
    const mr = resource(api);
    cloud.failNextCreate = new ReconcileError('SecretNotFound', 'no Secret', { terminal: false });
    await assert.rejects(creation.obtain(mr, ctxOf(mr)));
    const read = widgetOf(api.get(KEY));
    const written = creation.intentAt(read);
    assert.ok(written !== undefined);
    await assert.rejects(creation.find(read, written - 1, ctxOf(read)), StaleCopyError);
    clock.advance(GRACE - 1);
    await assert.rejects(creation.find(read, written - 1, ctxOf(read)), StaleCopyError);
    clock.advance(1);
    const afterGrace = await creation.find(read, written - 1, ctxOf(read));
    assert.deepEqual(afterGrace, { kind: 'found', cloud: undefined }, 'searched, and nothing found');
    assert.equal(lists(cloud), 1);
  });

  test('a recorded create retires the intent: the old date is then searched as anyone’s', async () => {
    const { api, creation } = setup();
    const mr = resource(api);
    await creation.obtain(mr, ctxOf(mr));
    const at = Number(
      String(JSON.parse(api.writes[0]?.what.slice(9) ?? '').annotations[CREATE_INTENT]).split('.')[0],
    );
    const found = await creation.find(mr, at, ctxOf(mr));
    assert.equal(found.kind, 'wait');
  });

  test('forget drops the intent and the recorded id', async () => {
    const { api, creation, cloud } = setup();
    const mr = resource(api);
    cloud.failNextCreate = new ReconcileError('CloudRejected', 'no', { terminal: false });
    await assert.rejects(creation.obtain(mr, ctxOf(mr)));
    const stored = widgetOf(api.get(KEY));
    const at = creation.intentAt(stored);
    assert.ok(at !== undefined);
    creation.forget(mr.metadata.uid);
    assert.equal((await creation.find(stored, at, ctxOf(stored))).kind, 'wait');

    const got = await creation.obtain(stored, ctxOf(stored));
    assert.equal(got.kind, 'wait');
    const other = setup();
    const fresh = resource(other.api);
    const made = await other.creation.obtain(fresh, ctxOf(fresh));
    assert.ok(made.kind === 'have');
    assert.equal(other.creation.recordedHere(fresh.metadata.uid, made.cloud.id), true);
    other.creation.forget(fresh.metadata.uid);
    assert.equal(other.creation.recordedHere(fresh.metadata.uid, made.cloud.id), false);
  });
});

describe('record', () => {
  test('writes the fill only to the version read; on a conflict, the id alone', async () => {
    const { api, cloud, creation } = setup();
    const mr = resource(api, undefined, { size: 1 });
    api.patchSpec(KEY, { size: 5 });
    const widget = cloud.put({ name: 'w', size: 2 });
    const recorded = await creation.record(mr, widget, (w) => ({ size: w.size }));
    assert.equal(recorded.filled, undefined);
    const stored = api.get(KEY);
    assert.deepEqual(stored?.spec, { size: 5 }, "the user's value stands");
    assert.equal(stored?.metadata.annotations?.[EXTERNAL_ID], widget.id);
    assert.equal(recorded.metadata.resourceVersion, stored?.metadata.resourceVersion);
    assert.equal(creation.recordedHere(mr.metadata.uid, widget.id), true);
  });

  test('a failure of the conditional write other than a conflict is thrown, and nothing is recorded', async () => {
    const { api, cloud, creation } = setup();
    const mr = resource(api);
    let writes = 0;
    api.beforePatch = () => {
      writes += 1;
      if (writes === 1) throw new KubeApiError('PATCH', KEY, 500, 'InternalError', 'etcd is sad');
    };
    const widget = cloud.put({ name: 'w' });
    await assert.rejects(
      creation.record(mr, widget, (w) => ({ size: w.size })),
      /etcd is sad/,
    );
    assert.equal(creation.recordedHere(mr.metadata.uid, widget.id), false);
    assert.equal(api.writes.length, 0);
  });

  test('a resource gone before its id is recorded gets the object deleted in the cloud', async () => {
    const { api, cloud, creation } = setup();
    const mr = resource(api);
    api.vanish(KEY);
    const widget = cloud.put({ name: 'w' });
    await assert.rejects(creation.record(mr, widget), (error: unknown) => {
      assert.ok(error instanceof ReconcileError);
      assert.equal(error.reason, 'ResourceGone');
      assert.equal(error.terminal, false);
      assert.match(error.message, /while Widget 100 was made for it; deleted 100 in the cloud/);
      assert.ok(error.cause instanceof KubeApiError);
      return true;
    });
    assert.deepEqual(cloud.mutations(), [{ op: 'delete', id: '100' }]);
    assert.equal(creation.recordedHere(mr.metadata.uid, widget.id), false);
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal(lists(cloud), 1, 'the cache is asked to list again');
  });

  test('a gone resource whose object is already gone deletes nothing; a kind without delete leaves it', async () => {
    const { api, cloud, creation } = setup();
    const mr = resource(api);
    api.vanish(KEY);
    const gone = cloud.put({ name: 'w', status: 'TERMINATED' });
    await assert.rejects(creation.record(mr, gone), /ResourceGone|deleted 100 in the cloud/);
    assert.deepEqual(cloud.mutations(), []);

    const other = setup({
      adapter: (base) => {
        const { delete: _drop, ...keep } = base;
        return keep;
      },
    });
    const orphan = resource(other.api);
    other.api.vanish(KEY);
    const widget = other.cloud.put({ name: 'w' });
    await assert.rejects(other.creation.record(orphan, widget), /100 is left to finish/);
    assert.deepEqual(other.cloud.mutations(), []);
  });

  test('a create whose resource vanished meanwhile deletes what it made, and forgets the intent', async () => {
    const { api, cloud, creation } = setup();
    const mr = resource(api);
    cloud.duringCreate = () => void api.vanish(KEY);
    await assert.rejects(creation.obtain(mr, ctxOf(mr)), /ResourceGone|deleted 100 in the cloud/);
    assert.deepEqual(
      cloud.mutations().map((call) => call.op),
      ['create', 'delete'],
    );
    assert.equal(cloud.live().length, 0);
    const at = Number(
      String(JSON.parse(api.writes[0]?.what.slice(9) ?? '').annotations[CREATE_INTENT]).split('.')[0],
    );
    assert.equal((await creation.find(mr, at, ctxOf(mr))).kind, 'wait', 'nothing of it is remembered');
  });

  test('a create forgotten while in flight is still recorded, and its failure is still the failure', async () => {
    const { api, cloud, creation } = setup();
    const mr = resource(api);
    cloud.duringCreate = () => creation.forget(mr.metadata.uid);
    const got = await creation.obtain(mr, ctxOf(mr));
    assert.ok(got.kind === 'have');
    assert.equal(api.get(KEY)?.metadata.annotations?.[EXTERNAL_ID], got.cloud.id);

    const other = setup();
    const failing = resource(other.api);
    other.cloud.duringCreate = () => {
      other.creation.forget(failing.metadata.uid);
      throw new Error('socket hang up');
    };
    await assert.rejects(other.creation.obtain(failing, ctxOf(failing)), /socket hang up/);
  });

  test('without any key, intents are written sealed over the empty key and never trusted', async () => {
    const { api, creation } = setup({ keys: [] });
    const mr = resource(api);
    await creation.obtain(mr, ctxOf(mr));
    const [at = '', seal] = String(
      JSON.parse(api.writes[0]?.what.slice(9) ?? '').annotations[CREATE_INTENT],
    ).split('.');
    assert.equal(seal, sealIntent('', mr.metadata.uid, Number(at), 'w'));
    const sealed = resource(new FakeApi(), (uid) => intentOf(uid, 'w', Number(at), ''));
    assert.equal(creation.intentAt(sealed), undefined);
  });
});
