import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RESUME } from '../../src/managed/core/annotations.ts';
import type { Offer, PlacementSupport } from '../../src/managed/core/external-kind.ts';
import type { PausedBy, PlacementStatus } from '../../src/managed/core/status-schema.ts';
import { conditionOf, type Widget, type WidgetSpec } from './fakes.ts';
import { type WidgetWorld, widgetWorld } from './world.ts';

// Seeded, replayable interleavings of what the reconciler meets in a cluster: an informer that lags behind
// the writes (a stale copy), the same key delivered again, users changing and deleting resources, the cloud
// preempting or deleting objects, the operator killed and started again (nothing of its memory kept), the
// clock moving past deadlines. After every step the invariants are checked; a violation names the seed and
// the steps, and `INTERLEAVING_SEED=<seed>` replays that seed alone. Background lists still run on real
// timers, so a replay repeats every choice, not every microsecond.

const SEEDS = Number(process.env.INTERLEAVING_SEEDS ?? 1000);
const ONE = process.env.INTERLEAVING_SEED;
const STEPS = 30;

/** mulberry32: a small PRNG whose whole state is its seed. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** Widgets of size 2 are placed, on offers whose starts may fail; the offers are read again now and then. */
class Market implements PlacementSupport<WidgetSpec, Widget> {
  readonly offersNow: Offer[] = ['A', 'B', 'C'].map((gpuType, index) => ({
    gpuType,
    region: 'r1',
    spot: false,
    pricePerGpuHour: 0.1 * (index + 1),
  }));
  asOf = 0;
  readonly failing = new Set<string>();
  readonly refreshMs = 30_000;
  readonly maxAttempts = () => MAX_ATTEMPTS;
  readonly maxPricePerGpuHour = () => undefined;
  requested = (spec: WidgetSpec) => spec.size === 2;
  charged = () => undefined;
  failedToStart = (widget: Widget, phase: string | undefined) =>
    widget.status === 'FAILED' && phase !== 'RUNNING';
  async offers() {
    return { asOf: this.asOf, offers: this.offersNow, none: 'nothing fits' };
  }
}
const MAX_ATTEMPTS = 2;

const SPECS: WidgetSpec[] = [
  { size: 1 },
  { size: 2 },
  { size: 1, spot: true, recoveryPolicy: 'Recreate' },
  { size: 1, deadlineSeconds: 5, deadlineAction: 'Delete' },
  { size: 1, deadlineSeconds: 5, deadlineAction: 'Pause' },
];

interface Seen {
  preemptions: number;
  startTime?: string;
  /** Objects ever made for it when its deadline deleted it for good. */
  madeAtFinish?: number;
}

/** Runs one seed; answers the violations, each with the steps that led to it. */
async function run(seed: number): Promise<string[]> {
  const draw = random(seed);
  const pick = <T>(items: readonly T[]): T | undefined => items[Math.floor(draw() * items.length)];
  const market = new Market();
  for (const gpuType of ['A', 'B', 'C']) if (draw() < 0.5) market.failing.add(gpuType);
  /** Creates of placed objects for each resource since the offers were last read. */
  const placedCreates = new Map<string, number>();
  const w: WidgetWorld = widgetWorld({
    adapt: (kind, cloud) => ({
      ...kind,
      placement: market,
      create: async (mr, ctx) => {
        const placed = mr.status?.placement as PlacementStatus | undefined;
        const made = await kind.create(mr, ctx);
        if (!placed) return made;
        placedCreates.set(mr.metadata.uid, (placedCreates.get(mr.metadata.uid) ?? 0) + 1);
        const widget = cloud.objects.get(made.id);
        if (widget && market.failing.has(placed.gpuType)) widget.status = 'FAILED';
        return widget ? { ...widget } : made;
      },
    }),
  });
  market.asOf = w.clock.now() - 1_000;
  const steps: string[] = [];
  const violations: string[] = [];
  const seen = new Map<string, Seen>();
  let made = 0;
  const keys = () => [...w.api.objects.keys()];
  const ever = (uid: string) => [...w.cloud.objects.values()].filter((widget) => widget.marker === uid);
  const violate = (what: string) => violations.push(`seed ${seed}: ${what}\n  after: ${steps.join(' → ')}`);

  /** Widget ids under an operator pause its user has not lifted: the operator must never resume them. */
  const heldPaused = (): Set<string> => {
    const held = new Set<string>();
    for (const key of keys()) {
      const obj = w.api.get(key);
      const pausedBy = obj?.status?.pausedBy as PausedBy | undefined;
      const id = obj?.status?.id;
      if (!pausedBy || typeof id !== 'string') continue;
      const lifted =
        (obj?.metadata.generation ?? 0) > pausedBy.generation ||
        obj?.metadata.annotations?.[RESUME] !== pausedBy.resumeToken;
      if (!lifted) held.add(id);
    }
    return held;
  };

  const check = (held: Set<string>, callsBefore: number) => {
    for (const [uid, creates] of placedCreates) {
      if (creates > MAX_ATTEMPTS) violate(`${uid}: ${creates} creates within one read of the offers`);
    }
    for (const call of w.cloud.calls.slice(callsBefore)) {
      if (call.op === 'resume' && call.id !== undefined && held.has(call.id))
        violate(`widget ${call.id} resumed while the operator's pause held it`);
    }
    for (const key of keys()) {
      const obj = w.api.get(key);
      const uid = obj?.metadata.uid;
      if (!obj || !uid) continue;
      const objects = ever(uid);
      const live = objects.filter((widget) => widget.status !== 'TERMINATED');
      if (live.length > 1) violate(`${key}: ${live.length} live objects (${live.map((each) => each.id)})`);
      const before = seen.get(uid) ?? { preemptions: 0 };
      const preemptions = Number(obj.status?.preemptions ?? 0);
      if (preemptions < before.preemptions) violate(`${key}: preemptions went back to ${preemptions}`);
      const startTime = obj.status?.startTime;
      if (before.startTime !== undefined && startTime !== undefined && startTime !== before.startTime)
        violate(`${key}: startTime moved from ${before.startTime} to ${String(startTime)}`);
      const finished = conditionOf(obj, 'Failed')?.reason === 'DeadlineExceeded';
      if (before.madeAtFinish !== undefined && objects.length > before.madeAtFinish)
        violate(`${key}: made again after its deadline deleted it`);
      seen.set(uid, {
        preemptions: Math.max(preemptions, before.preemptions),
        startTime: before.startTime ?? (typeof startTime === 'string' ? startTime : undefined),
        madeAtFinish: before.madeAtFinish ?? (finished ? objects.length : undefined),
      });
    }
  };

  const reconcile = async (key: string, lag: number) => {
    const [namespace = '', name = ''] = key.split('/');
    w.api.lag = () => lag;
    try {
      await w.reconciler.reconcile({ namespace, name });
    } catch {
      // A failed turn is the work queue's to retry: the invariants are what counts.
    } finally {
      w.api.lag = () => 0;
    }
  };

  try {
    for (let step = 0; step < STEPS; step++) {
      const held = heldPaused();
      const callsBefore = w.cloud.calls.length;
      const roll = draw();
      const key = pick(keys());
      if (roll < 0.45 && key) {
        const lag = pick([0, 0, 0, 1, 1, 2]) ?? 0;
        steps.push(`reconcile ${key} lag ${lag}`);
        await reconcile(key, lag);
        // Delivered twice: the same key again at once, often from the same stale window.
        if (draw() < 0.3) await reconcile(key, lag);
      } else if (roll < 0.55 && made < 4) {
        const spec = pick(SPECS) ?? { size: 1 };
        const name = `r${made++}`;
        steps.push(`create ${name} ${JSON.stringify(spec)}`);
        w.api.create(name, { ...spec });
      } else if (roll < 0.62 && key) {
        const paused = w.api.get(key)?.spec as WidgetSpec | undefined;
        steps.push(`user sets ${key} paused ${!paused?.paused}`);
        w.api.patchSpec(key, { paused: !paused?.paused });
      } else if (roll < 0.67 && key) {
        steps.push(`user resumes ${key}`);
        w.api.annotate(key, { [RESUME]: `t${step}` });
      } else if (roll < 0.72 && key) {
        steps.push(`user deletes ${key}`);
        w.api.delete(key);
      } else if (roll < 0.78) {
        const spot = pick(w.cloud.live().filter((widget) => widget.spot && widget.status === 'RUNNING'));
        if (spot) {
          steps.push(`cloud preempts ${spot.id}`);
          spot.status = 'FAILED';
        }
      } else if (roll < 0.8) {
        steps.push('offers read again');
        market.asOf = w.clock.now();
        placedCreates.clear();
      } else if (roll < 0.82) {
        // Placed ones are left alone: an object deleted behind the operator's back is no attempt.
        const victim = pick(w.cloud.live().filter((widget) => !widget.spot && widget.size !== 2));
        if (victim) {
          steps.push(`cloud deletes ${victim.id}`);
          victim.status = 'TERMINATED';
        }
      } else if (roll < 0.9) {
        steps.push('operator restarted');
        w.restart();
      } else {
        steps.push('clock +3 s');
        w.clock.advance(3_000);
      }
      check(held, callsBefore);
    }
    // Everything deleted: nothing is left running or stuck, from any interleaving.
    steps.push('all deleted');
    for (const key of keys()) w.api.delete(key);
    w.clock.advance(600_000);
    for (let round = 0; round < 3 && keys().length > 0; round++) {
      for (const key of keys()) await w.settle(key, 12);
    }
    if (keys().length > 0) violate(`stuck after deletion: ${keys().join(', ')}`);
    const leaked = w.cloud.live().filter((widget) => widget.marker !== undefined);
    if (leaked.length > 0) violate(`leaked: ${leaked.map((widget) => widget.id).join(', ')}`);
  } finally {
    await w.close();
  }
  return violations;
}

test(`seeded interleavings of lag, repeats, kills, users and the cloud keep every invariant (${ONE ? `seed ${ONE}` : `${SEEDS} seeds`})`, async () => {
  const seeds = ONE ? [Number(ONE)] : Array.from({ length: SEEDS }, (_, index) => index + 1);
  const violations: string[] = [];
  // Seeds are independent worlds: a few at a time, so their waits on real timers overlap.
  const next = seeds[Symbol.iterator]();
  const worker = async () => {
    for (let step = next.next(); !step.done; step = next.next()) violations.push(...(await run(step.value)));
  };
  await Promise.all(Array.from({ length: 16 }, worker));
  assert.deepEqual(violations.slice(0, 3), [], `${violations.length} violations`);
});
