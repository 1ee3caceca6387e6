import assert from 'node:assert/strict';
import { afterEach, describe, test } from 'node:test';
import { pino } from 'pino';
import { ApiCode } from '../../src/api/codes.ts';
import { CloudApiError } from '../../src/api/errors.ts';
import { CloudCache } from '../../src/managed/cloud-cache/cloud-cache.ts';
import {
  CREATE_INTENT,
  CREATE_NAME,
  CREATE_PLACEMENT,
  OWNER_ENV,
} from '../../src/managed/core/annotations.ts';
import { ReconcileError } from '../../src/managed/core/errors.ts';
import type { EventSink } from '../../src/managed/core/event-sink.ts';
import type {
  ActContext,
  ExternalKind,
  ManagedObject,
  Offer,
  PlacementSupport,
} from '../../src/managed/core/external-kind.ts';
import type { PlacementStatus } from '../../src/managed/core/status-schema.ts';
import { Creation, sealIntent } from '../../src/managed/creation/creation.ts';
import { Placer, withLoss } from '../../src/managed/creation/placement.ts';
import { MovableClock } from '../support/clock.ts';
import { FakeApi, FakeCloud, type Widget, type WidgetSpec } from './fakes.ts';

// Placement on small fakes: a Placer over offers the test sets, and crash-safe creation moving to the
// next offer when the fake cloud refuses one for lack of room (code 12002).

const KEY = 'ns-a/w';
/** Where each test's clock stands: now, so the fakes' wall-clock stamps and the clock agree. */
const T0 = Date.now();

const offer = (gpuType: string, pricePerGpuHour: number, spot = false, region = 'r1'): Offer => ({
  gpuType,
  region,
  spot,
  pricePerGpuHour,
});

/** Offers the test controls, read "at" `asOf`; counts the reads. */
class Market implements PlacementSupport<WidgetSpec, Widget> {
  offersNow: Offer[] = [];
  asOf = T0;
  reads = 0;
  readonly refreshMs = 30_000;
  requested = (spec: WidgetSpec) => spec.size !== undefined && spec.size > 0;
  maxAttempts = () => 3;
  maxPricePerGpuHour = () => undefined;
  charged = (widget: Widget) => String(widget.size);
  failedToStart = (widget: Widget, phase: string | undefined) =>
    widget.status === 'FAILED' && phase !== 'RUNNING';
  async offers(_spec: WidgetSpec, allowed: (gpuType: string) => boolean) {
    this.reads += 1;
    return {
      asOf: this.asOf,
      offers: this.offersNow.filter((each) => allowed(each.gpuType)),
      none: 'nothing fits',
    };
  }
}

const noCapacity = () =>
  new CloudApiError({
    operation: 'widgets.create',
    creates: true,
    httpStatus: 200,
    code: ApiCode.NoCapacity,
    serviceMessage: 'no capacity',
    attempts: 1,
  });

const caches: Array<CloudCache<Widget>> = [];
afterEach(() => {
  for (const cache of caches.splice(0)) cache.stop();
});

function setup(options: { full?: string[]; allowed?: string[]; graceMs?: number } = {}) {
  const cloud = new FakeCloud();
  const api = new FakeApi();
  const clock = new MovableClock({ at: T0 });
  const market = new Market();
  const full = new Set(options.full ?? []);
  /** The offer each create was sent for, in order. */
  const sent: string[] = [];
  const base = cloud.kind();
  const adapter: ExternalKind<WidgetSpec, Widget> = {
    ...base,
    create: async (mr, ctx) => {
      const placed = mr.status?.placement;
      sent.push(placed ? `${placed.gpuType}/${placed.spot ? 'spot' : 'od'}` : 'unplaced');
      if (placed && full.has(placed.gpuType)) throw noCapacity();
      return base.create(mr, ctx);
    },
  };
  const cache = new CloudCache<Widget>(adapter, {
    intervalMs: 60_000,
    minIntervalMs: 0,
    onChange: () => {},
    clock,
    log: pino({ level: 'silent' }),
  });
  caches.push(cache);
  const events: string[] = [];
  const sink: EventSink = {
    event: (_obj, type, reason, message) => void events.push(`${type} ${reason}: ${message}`),
    forget: () => {},
  };
  const allowed = options.allowed;
  const placer = new Placer(market, (gpuType) => allowed === undefined || allowed.includes(gpuType), clock);
  const creation = new Creation<WidgetSpec, Widget>(adapter, cache, api.store, api.writer, {
    graceMs: options.graceMs ?? 60_000,
    skewMs: 1_000,
    intentKeys: () => ['key-1'],
    events: sink,
    clock,
    placer: placer as Placer<unknown, unknown>,
  });
  return { cloud, api, clock, market, full, sent, events, creation, placer, cache };
}

function widget(api: FakeApi, status?: Record<string, unknown>): ManagedObject<WidgetSpec> {
  api.create('w', { size: 2 });
  const obj = api.objects.get(KEY);
  assert.ok(obj);
  if (status) obj.status = status;
  const read = api.get(KEY);
  assert.ok(read);
  return { ...read, spec: read.spec as WidgetSpec };
}

const ctxOf = (mr: ManagedObject<unknown>): ActContext => ({
  resolveEnv: async () => [],
  secretsChanged: () => false,
  ownerMarker: { key: OWNER_ENV, value: mr.metadata.uid },
});

function storedPlacement(api: FakeApi): PlacementStatus | undefined {
  return api.objects.get(KEY)?.status?.placement as PlacementStatus | undefined;
}

async function refusal(promise: Promise<unknown>): Promise<ReconcileError> {
  const error = await promise.then(
    () => undefined,
    (failure: unknown) => failure,
  );
  assert.ok(error instanceof ReconcileError, `a ReconcileError, not ${String(error)}`);
  return error;
}

describe('Placer', () => {
  test('chooses the first offer, recorded with its price and time', async () => {
    const w = setup();
    w.market.offersNow = [offer('A', 0.5), offer('B', 0.9)];
    const placed = await w.placer.choose(widget(w.api), []);
    assert.deepEqual(placed, {
      gpuType: 'A',
      region: 'r1',
      spot: false,
      pricePerGpuHour: '0.5000',
      placedAt: new Date(T0).toISOString(),
    });
  });

  test('rules out what was tried since the offers were read, and only that', async () => {
    const w = setup();
    w.market.offersNow = [offer('A', 0.5), offer('B', 0.9)];
    const mr = widget(w.api);
    const triedA = (at: number) => ({
      gpuType: 'A',
      region: 'r1',
      spot: false,
      pricePerGpuHour: '0.5000',
      outcome: 'NoCapacity' as const,
      at: new Date(at).toISOString(),
    });
    assert.equal((await w.placer.choose(mr, [triedA(T0 + 1)])).gpuType, 'B');
    // A refusal older than the offers: the offers know better, so A is tried again.
    assert.equal((await w.placer.choose(mr, [triedA(T0 - 1)])).gpuType, 'A');
    // Spot A is another offer than on-demand A.
    w.market.offersNow = [offer('A', 0.3, true), offer('A', 0.5)];
    assert.deepEqual(
      await w.placer.choose(mr, [{ ...triedA(T0 + 1), spot: true }]).then((p) => p.spot),
      false,
    );
  });

  test('with no offer, or none left after the attempts allowed, nothing is chosen and it says why', async () => {
    const w = setup();
    const mr = widget(w.api);
    const none = await refusal(w.placer.choose(mr, []));
    assert.equal(none.reason, 'NoOfferWithinPrice');
    assert.match(none.message, /nothing fits; nothing is created; looked at again in 30 s/);
    assert.equal(none.terminal, false);
    assert.equal(none.retryAfterMs, 30_000);

    w.market.offersNow = [offer('A', 0.1), offer('B', 0.2), offer('C', 0.3), offer('D', 0.4)];
    const tried = ['A', 'B', 'C'].map((gpuType) => ({
      gpuType,
      region: 'r1',
      spot: false,
      pricePerGpuHour: '0.1',
      outcome: 'NoCapacity' as const,
      at: new Date(T0 + 5).toISOString(),
    }));
    const exhausted = await refusal(w.placer.choose(mr, tried));
    assert.equal(exhausted.reason, 'NoCapacity', 'three attempts: D is left for the next read of the offers');
    assert.match(exhausted.message, /A on-demand in r1 .*\(NoCapacity\); B .*; C /);
  });

  test('a loss the status records rules its offer out until the offers are read again, whoever places next', async () => {
    const w = setup();
    w.market.offersNow = [offer('A', 0.3, true), offer('A', 0.5)];
    const last = {
      gpuType: 'A',
      region: 'r1',
      spot: true,
      pricePerGpuHour: '0.3000',
      placedAt: new Date(T0 - 60_000).toISOString(),
    };
    // Recorded with the status that reported the preemption: a fresh Placer (a restart) reads it there.
    const lost = withLoss(last, 'Preempted', T0 + 10);
    const again = await w.placer.choose(widget(w.api, { placement: lost }), []);
    assert.equal(again.spot, false, 'spot preferred falls back to on-demand');
    assert.deepEqual(
      again.attempts?.map((attempt) => `${attempt.gpuType}/${attempt.spot}/${attempt.outcome}`),
      ['A/true/Preempted'],
    );
    // Offers read after the loss know better: the offer is tried again.
    w.market.asOf = T0 + 20;
    assert.equal((await w.placer.choose(widget(w.api, { placement: lost }), [])).spot, true);
  });

  test('a loss is recorded once per placement, and each counts against maxAttempts until the offers are read again', async () => {
    const w = setup();
    w.market.offersNow = [offer('A', 0.5), offer('B', 0.7), offer('C', 0.9), offer('D', 1.1)];
    w.market.asOf = T0 - 30_000;
    const onA = await w.placer.choose(widget(w.api), []);
    const failedA = withLoss(onA, 'FailedToStart', T0 + 1);
    assert.equal(
      withLoss(failedA, 'FailedToStart', T0 + 2),
      failedA,
      'the same loss seen again is not counted twice',
    );
    const onB = await w.placer.choose(widget(w.api, { placement: failedA }), []);
    assert.equal(onB.gpuType, 'B');
    const failedB = withLoss(onB, 'FailedToStart', T0 + 3);
    const onC = await w.placer.choose(widget(w.api, { placement: failedB }), []);
    assert.equal(onC.gpuType, 'C');
    assert.deepEqual(
      onC.attempts?.map((attempt) => `${attempt.gpuType}:${attempt.outcome}`),
      ['A:FailedToStart', 'B:FailedToStart'],
    );
    const failedC = withLoss(onC, 'FailedToStart', T0 + 4);
    const exhausted = await refusal(w.placer.choose(widget(w.api, { placement: failedC }), []));
    assert.equal(
      exhausted.reason,
      'NoCapacity',
      'three starts failed: D waits for the next read of the offers',
    );
    // The offers read again: every loss before that read is forgiven, A is tried first again.
    w.market.asOf = T0 + 5;
    assert.equal((await w.placer.choose(widget(w.api, { placement: failedC }), [])).gpuType, 'A');
  });

  test('an offer of a type the account does not allow is never chosen', async () => {
    const w = setup({ allowed: ['B'] });
    w.market.offersNow = [offer('A', 0.1), offer('B', 0.9)];
    assert.equal((await w.placer.choose(widget(w.api), [])).gpuType, 'B');
  });
});

describe('creation on a placement', () => {
  test('records the offer with the intent and in status before the create, then creates on it', async () => {
    const w = setup();
    w.market.offersNow = [offer('A', 0.5)];
    const mr = widget(w.api);
    const got = await w.creation.obtain(mr, ctxOf(mr));
    assert.equal(got.kind, 'have');
    assert.deepEqual(w.sent, ['A/od']);
    const [intentWrite, statusWrite] = w.api.writes;
    assert.ok(intentWrite?.what.startsWith('metadata '));
    const intent = JSON.parse(intentWrite?.what.slice('metadata '.length) ?? '');
    const sealedPlacement = String(intent.annotations[CREATE_PLACEMENT]);
    assert.equal(JSON.parse(sealedPlacement).gpuType, 'A');
    const [at = '', seal] = String(intent.annotations[CREATE_INTENT]).split('.');
    assert.equal(
      seal,
      sealIntent('key-1', mr.metadata.uid, Number(at), 'w', sealedPlacement),
      'the offer is sealed',
    );
    assert.equal(statusWrite?.what, 'status', 'status.placement is written before the create');
    assert.equal(storedPlacement(w.api)?.gpuType, 'A');
    assert.equal(
      w.api.objects.get(KEY)?.metadata.annotations?.[CREATE_PLACEMENT],
      undefined,
      'retired with the id',
    );
  });

  test('a create refused for lack of room moves to the next offer, with an Event, and never twice', async () => {
    const w = setup({ full: ['A', 'B'] });
    w.market.offersNow = [offer('A', 0.5), offer('B', 0.7), offer('C', 0.9)];
    const mr = widget(w.api);
    const got = await w.creation.obtain(mr, ctxOf(mr));
    assert.equal(got.kind, 'have');
    assert.deepEqual(w.sent, ['A/od', 'B/od', 'C/od']);
    assert.equal(w.cloud.live().length, 1, 'one object, on C');
    assert.deepEqual(
      w.events.map((event) => event.split(':')[0]),
      ['Normal PlacementMoved', 'Normal PlacementMoved'],
    );
    assert.match(w.events[0] ?? '', /A on-demand in r1 at 0\.5000 USD\/GPU-hour has no room .* trying B/);
    const placed = storedPlacement(w.api);
    assert.equal(placed?.gpuType, 'C');
    assert.deepEqual(
      placed?.attempts?.map((attempt) => `${attempt.gpuType}:${attempt.outcome}`),
      ['A:NoCapacity', 'B:NoCapacity'],
    );
    assert.equal(w.market.reads, 3, 'the offers are the cache: read per choice, never searched per resource');
  });

  test('when every offer is full, nothing is created and the round ends in NoCapacity; the next starts afresh', async () => {
    const w = setup({ full: ['A', 'B', 'C'] });
    w.market.offersNow = [offer('A', 0.5), offer('B', 0.7), offer('C', 0.9)];
    const mr = widget(w.api);
    const error = await refusal(w.creation.obtain(mr, ctxOf(mr)));
    assert.equal(error.reason, 'NoCapacity');
    assert.deepEqual(w.sent, ['A/od', 'B/od', 'C/od']);
    assert.equal(w.cloud.live().length, 0);
    // Room frees; fresher offers come: the next reconcile places again (this process knows C was refused).
    w.full.clear();
    w.clock.advance(30_000);
    w.market.asOf = w.clock.now();
    const again = widget2(w.api);
    const got = await w.creation.obtain(again, ctxOf(again));
    assert.equal(got.kind, 'have');
    assert.equal(w.sent.at(-1), 'A/od', 'a fresh read of the offers tries the cheapest again');
  });

  test('an intent another process sealed with an offer: after the grace, created again on that offer only', async () => {
    const w = setup({ graceMs: 0 });
    w.market.offersNow = [offer('Cheaper', 0.1)];
    const placement: PlacementStatus = {
      gpuType: 'B',
      region: 'r1',
      spot: false,
      pricePerGpuHour: '0.7000',
      placedAt: new Date(T0 - 5_000).toISOString(),
    };
    const text = JSON.stringify(placement);
    const at = T0 - 5_000;
    w.api.create('w', { size: 2 }, { creationTimestamp: new Date(T0 - 60_000).toISOString() });
    w.api.annotate(KEY, {
      [CREATE_INTENT]: `${at}.${sealIntent('key-1', 'uid-1', at, 'w', text)}`,
      [CREATE_NAME]: 'w',
      [CREATE_PLACEMENT]: text,
    });
    const mr = widget2(w.api);
    const got = await w.creation.obtain(mr, ctxOf(mr));
    assert.equal(got.kind, 'have');
    assert.deepEqual(w.sent, ['B/od'], 'never a second object on another type');
  });

  test('a placement written by hand does not verify: the intent is ignored and the operator places itself', async () => {
    const w = setup({ graceMs: 0 });
    w.market.offersNow = [offer('A', 0.5)];
    const at = T0 - 5_000;
    const forged = JSON.stringify({
      gpuType: 'Forbidden',
      region: 'r1',
      spot: false,
      pricePerGpuHour: '0.0001',
      placedAt: new Date(at).toISOString(),
    });
    w.api.create('w', { size: 2 });
    // Sealed without the placement: the placement was added afterwards.
    w.api.annotate(KEY, {
      [CREATE_INTENT]: `${at}.${sealIntent('key-1', 'uid-1', at, 'w')}`,
      [CREATE_NAME]: 'w',
      [CREATE_PLACEMENT]: forged,
    });
    const mr = widget2(w.api);
    assert.equal(w.creation.intentAt(mr), undefined);
    await w.creation.obtain(mr, ctxOf(mr));
    assert.deepEqual(w.sent, ['A/od']);
  });
});

/** The resource as it stands now, read afresh. */
function widget2(api: FakeApi): ManagedObject<WidgetSpec> {
  const read = api.get(KEY);
  assert.ok(read);
  return { ...read, spec: read.spec as WidgetSpec };
}
