import assert from 'node:assert/strict';
import { afterEach, describe, test } from 'node:test';
import type { Offer, PlacementSupport } from '../../src/managed/core/external-kind.ts';
import type { PlacementStatus } from '../../src/managed/core/status-schema.ts';
import { conditionOf, type Widget, type WidgetSpec } from './fakes.ts';
import { type WidgetWorld, widgetWorld } from './world.ts';

// Placement through the whole reconciler on the fakes: what it decided (attempts, losses) lives in the
// resource's status only, so every turn — this process's, a restarted one's — counts the same attempts.

const KEY = 'ns-a/w';

/** Offers the test controls, read "at" `asOf`, each pool with the price its objects are charged. */
class Market implements PlacementSupport<WidgetSpec, Widget> {
  offersNow: Offer[] = [];
  asOf = Date.now();
  readonly refreshMs = 30_000;
  /** GPU types whose objects fail before they run. */
  readonly failing = new Set<string>();
  /** What the cloud charges per GPU-hour by type, when it differs from the offer (a price rose). */
  readonly charges = new Map<string, number>();
  /** Runs right after each create or delete the cloud answered: a place to interleave another writer. */
  afterChange: (() => void) | undefined;
  /** Deletes the cloud fails before they take effect (a 500), one each. */
  failingDeletes = 0;
  requested = () => true;
  maxAttempts = () => 2;
  maxPricePerGpuHour = () => 0.5;
  charged = (widget: Widget) => (widget.charged === undefined ? undefined : widget.charged.toFixed(4));
  // As a pod's: failed with no phase recorded before, it never ran (widgets have no INITIALIZING).
  failedToStart = (widget: Widget, phase: string | undefined) =>
    widget.status === 'FAILED' && phase === undefined;
  async offers() {
    return { asOf: this.asOf, offers: this.offersNow, none: 'nothing fits' };
  }
}

const offer = (gpuType: string, pricePerGpuHour: number): Offer => ({
  gpuType,
  region: 'r1',
  spot: false,
  pricePerGpuHour,
});

function placedWorld(): { w: WidgetWorld; market: Market; creates: string[] } {
  const market = new Market();
  const creates: string[] = [];
  const w = widgetWorld({
    adapt: (kind, cloud) => ({
      ...kind,
      placement: market,
      create: async (mr, ctx) => {
        const placed = mr.status?.placement as PlacementStatus | undefined;
        const gpuType = placed?.gpuType ?? 'none';
        creates.push(gpuType);
        const made = await kind.create(mr, ctx);
        const widget = cloud.objects.get(made.id);
        assert.ok(widget);
        widget.gpuType = gpuType;
        widget.charged = market.charges.get(gpuType) ?? Number(placed?.pricePerGpuHour);
        // A pool whose starts fail: the object is made, billed for a moment, and fails before it runs.
        if (market.failing.has(gpuType)) widget.status = 'FAILED';
        market.afterChange?.();
        return { ...widget };
      },
      delete: async (id) => {
        if (market.failingDeletes > 0) {
          market.failingDeletes -= 1;
          throw new Error('the cloud answered 500');
        }
        await kind.delete?.(id);
        market.afterChange?.();
      },
    }),
  });
  return { w, market, creates };
}

const worlds: WidgetWorld[] = [];
afterEach(async () => {
  for (const w of worlds.splice(0)) await w.close();
});

describe('placement through the reconciler', () => {
  test('starts that fail count against maxAttempts: two creates, then NoCapacity with nothing running, until the offers are read again', async () => {
    const { w, market, creates } = placedWorld();
    worlds.push(w);
    market.offersNow = [offer('A', 0.1), offer('B', 0.2), offer('C', 0.3)];
    market.asOf = w.clock.now() - 1_000;
    market.failing.add('A').add('B');
    w.api.create('w', { size: 1 });
    for (let turn = 0; turn < 40; turn++)
      await w.reconciler.reconcile({ namespace: 'ns-a', name: 'w' }).catch(() => {});
    assert.deepEqual(creates, ['A', 'B'], 'two attempts: C waits for the next read of the offers');
    const stored = w.api.get(KEY);
    assert.equal(conditionOf(stored, 'Synced')?.reason, 'NoCapacity');
    assert.match(
      conditionOf(stored, 'Synced')?.message ?? '',
      /A .*\(FailedToStart\); B .*\(FailedToStart\)/,
    );
    assert.equal(w.cloud.live().length, 0, 'every failed object deleted, nothing running');
    const placement = stored?.status?.placement as PlacementStatus | undefined;
    assert.deepEqual(
      placement?.attempts?.map((attempt) => `${attempt.gpuType}:${attempt.outcome}`),
      ['A:FailedToStart', 'B:FailedToStart'],
    );
    assert.deepEqual(
      w.reasonsOf(KEY).filter((reason) => reason === 'Drifted'),
      [],
      'a re-placed object is compared with its own placement',
    );
    // The offers read again: the attempts start afresh, and at most maxAttempts more creates follow.
    market.asOf = w.clock.now() + 1;
    market.failing.delete('A');
    await w.settle(KEY, 40);
    assert.deepEqual(creates, ['A', 'B', 'A']);
    assert.equal(conditionOf(w.api.get(KEY), 'Synced')?.reason, 'ReconcileSuccess');
  });

  test('a loss is recorded before its object is deleted: the status writes around the delete refused (409), the attempt still counts and the next turn replaces it', async () => {
    const { w, market, creates } = placedWorld();
    worlds.push(w);
    market.offersNow = [offer('A', 0.1), offer('B', 0.2)];
    market.asOf = w.clock.now() - 1_000;
    market.failing.add('A');
    // Another writer touches the resource right after each cloud call that makes or deletes an object,
    // so the status write of that turn is refused, as a stale copy's is (chaos, cloud-faults: an object
    // taken over and deleted in turns whose status writes were lost was later refused for good).
    let touches = 0;
    market.afterChange = () => w.api.annotate(KEY, { touched: String(++touches) });
    w.api.create('w', { size: 1 });
    for (let turn = 0; turn < 40; turn++)
      await w.reconciler.reconcile({ namespace: 'ns-a', name: 'w' }).catch(() => {});
    const stored = w.api.get(KEY);
    assert.notEqual(conditionOf(stored, 'Synced')?.reason, 'ExternalResourceNotFound');
    assert.deepEqual(
      creates,
      ['A', 'B'],
      'A failed to start once and is never tried again before the next read',
    );
    assert.deepEqual(
      w.cloud.live().map((widget) => widget.gpuType),
      ['B'],
    );
    const placement = stored?.status?.placement as PlacementStatus | undefined;
    assert.deepEqual(
      placement?.attempts?.map((attempt) => `${attempt.gpuType}:${attempt.outcome}`),
      ['A:FailedToStart'],
    );
    assert.ok(w.api.conflicts.length > 0, 'the status writes were refused');
  });

  test('a recorded loss survives a delete that failed: the object that failed to start is still deleted and replaced', async () => {
    const { w, market, creates } = placedWorld();
    worlds.push(w);
    market.offersNow = [offer('A', 0.1), offer('B', 0.2)];
    market.asOf = w.clock.now() - 1_000;
    market.failing.add('A');
    market.failingDeletes = 1;
    w.api.create('w', { size: 1 });
    for (let turn = 0; turn < 40; turn++)
      await w.reconciler.reconcile({ namespace: 'ns-a', name: 'w' }).catch(() => {});
    assert.equal(market.failingDeletes, 0, 'the first delete failed');
    assert.deepEqual(creates, ['A', 'B']);
    assert.deepEqual(
      w.cloud.live().map((widget) => widget.gpuType),
      ['B'],
      'the object that failed to start is gone, its replacement runs',
    );
  });

  test('an object charged above maxPricePerGpuHour is deleted at once, recorded AboveCap, and placement moves on', async () => {
    const { w, market, creates } = placedWorld();
    worlds.push(w);
    market.offersNow = [offer('A', 0.4), offer('B', 0.45)];
    market.asOf = w.clock.now() - 1_000;
    // A's price rose after the offers were read: the cloud charges 0.95 for what was offered at 0.4.
    market.charges.set('A', 0.95);
    w.api.create('w', { size: 1 });
    await w.settle(KEY, 40);
    assert.deepEqual(creates, ['A', 'B']);
    const live = w.cloud.live();
    assert.deepEqual(
      live.map((widget) => widget.gpuType),
      ['B'],
      'the object above the cap deleted, one object left',
    );
    const stored = w.api.get(KEY);
    const placement = stored?.status?.placement as PlacementStatus | undefined;
    assert.equal(placement?.gpuType, 'B');
    assert.deepEqual(
      placement?.attempts?.map((attempt) => `${attempt.gpuType}:${attempt.outcome}`),
      ['A:AboveCap'],
    );
    const warning = w.recorded.events.find((event) => event.reason === 'AboveCap');
    assert.match(warning?.message ?? '', /charged 0\.9500 .* above maxPricePerGpuHour 0\.5/);
    assert.equal(warning?.type, 'Warning');
  });
});
