// The parts of placement that are functions of what they are given: the choice among offers, a loss's
// record, the price cap, the report's part. The loop over real turns is placement.test.ts and
// placement-loop.test.ts.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ApiCode } from '../../src/api/codes.ts';
import { CloudApiError } from '../../src/api/errors.ts';
import { ReconcileError } from '../../src/managed/core/errors.ts';
import type { ManagedObject, Offer, PlacementSupport } from '../../src/managed/core/external-kind.ts';
import type { PlacementStatus } from '../../src/managed/core/status-schema.ts';
import {
  ABOVE_CAP,
  type Attempt,
  aboveCap,
  describeOffer,
  FAILED_TO_START,
  isNoCapacity,
  Placer,
  placementReport,
  withLoss,
} from '../../src/managed/creation/placement.ts';

interface Spec {
  cap?: number;
}
interface Cloud {
  id: string;
  charged?: string;
}

const NOW = Date.parse('2026-12-01T12:00:00Z');
const at = (offsetMs: number) => new Date(NOW + offsetMs).toISOString();

const offer = (gpuType: string, region = 'us-east-1', spot = false, pricePerGpuHour = 1): Offer => ({
  gpuType,
  region,
  spot,
  pricePerGpuHour,
});

function support(offers: Offer[], asOf = NOW - 10_000): PlacementSupport<Spec, Cloud> {
  return {
    requested: () => true,
    offers: async () => ({ asOf, offers, none: 'no offer fits' }),
    maxAttempts: () => 3,
    refreshMs: 30_000,
    charged: (cloud) => cloud.charged,
    maxPricePerGpuHour: (spec) => spec.cap,
    failedToStart: () => false,
  };
}

const attempt = (of: Offer, outcome: Attempt['outcome'], when: string): Attempt => ({
  gpuType: of.gpuType,
  region: of.region,
  spot: of.spot,
  pricePerGpuHour: of.pricePerGpuHour.toFixed(4),
  outcome,
  at: when,
});

function resource(status?: ManagedObject<Spec>['status'], spec: Spec = {}): ManagedObject<Spec> {
  return {
    apiVersion: 'example.com/v1',
    kind: 'Widget',
    metadata: { namespace: 'team-a', name: 'w', uid: 'u1', generation: 1, resourceVersion: '1' },
    spec,
    ...(status ? { status } : {}),
  };
}

const placer = (offers: Offer[]) => new Placer(support(offers), () => true, { now: () => NOW });

describe('Placer.choose', () => {
  test('an attempt rules out its own offer only: another region or spot of the type is still tried', async () => {
    const l40s = offer('L40S');
    const status = {
      placement: {
        ...attempt(offer('L40S', 'us-east-1', true), 'NoCapacity', at(-1000)),
        placedAt: at(-2000),
        attempts: [
          attempt(offer('L40S', 'us-east-1', true), 'NoCapacity', at(-1000)),
          attempt(offer('L40S', 'eu-west-1'), 'NoCapacity', at(-900)),
        ],
      },
    } as unknown as ManagedObject<Spec>['status'];
    const chosen = await placer([l40s]).choose(resource(status), []);
    assert.equal(chosen.gpuType, 'L40S');
    assert.equal(chosen.region, 'us-east-1');
    assert.equal(chosen.spot, false);
  });

  test('a resource whose status has no placement yet is placed on the first offer', async () => {
    const chosen = await placer([offer('A100'), offer('H100')]).choose(resource({}), []);
    assert.equal(chosen.gpuType, 'A100');
    assert.equal(chosen.attempts, undefined);
  });

  test('the status keeps the last 16 attempts, the newest', async () => {
    const old = Array.from({ length: 20 }, (_, i) =>
      attempt(offer(`old-${i}`), 'NoCapacity', at(-100_000 + i)),
    );
    const status = {
      placement: { ...attempt(offer('old-19'), 'NoCapacity', at(0)), placedAt: at(-100_000), attempts: old },
    } as unknown as ManagedObject<Spec>['status'];
    const chosen = await placer([offer('A100')]).choose(resource(status), []);
    assert.equal(chosen.attempts?.length, 16);
    assert.deepEqual(
      chosen.attempts?.map((each) => each.gpuType),
      old.slice(-16).map((each) => each.gpuType),
    );
  });

  test('every offer used up: NoCapacity, not terminal, looked at again when the offers are read again', async () => {
    const a100 = offer('A100');
    const error = await placer([a100])
      .choose(resource({}), [attempt(a100, 'FailedToStart', at(0))])
      .then(
        () => undefined,
        (thrown: unknown) => thrown,
      );
    assert.ok(error instanceof ReconcileError);
    assert.equal(error.reason, 'NoCapacity');
    assert.equal(error.terminal, false);
    assert.equal(error.retryAfterMs, 30_000);
    assert.match(error.message, /A100 on-demand in us-east-1 at 1\.0000 USD\/GPU-hour \(FailedToStart\)/);
  });
});

describe('withLoss', () => {
  const a100 = offer('A100');
  const placed = (attempts?: Attempt[]): PlacementStatus => ({
    gpuType: 'A100',
    region: 'us-east-1',
    spot: false,
    pricePerGpuHour: '1.0000',
    placedAt: at(0),
    ...(attempts ? { attempts } : {}),
  });

  test('records the loss once: a loss already seen since the placement is not recorded again', () => {
    const once = withLoss(placed(), 'FailedToStart', NOW + 5000);
    assert.deepEqual(once.attempts, [attempt(a100, 'FailedToStart', at(5000))]);
    assert.equal(withLoss(once, 'FailedToStart', NOW + 9000), once);
    // Seen at the very time of the placement counts as seen since.
    const atPlacement = placed([attempt(a100, 'FailedToStart', at(0))]);
    assert.equal(withLoss(atPlacement, 'FailedToStart', NOW + 9000), atPlacement);
  });

  test('a loss of another outcome, or from before this placement, is a new one', () => {
    const preempted = withLoss(placed([attempt(a100, 'Preempted', at(1000))]), 'FailedToStart', NOW + 5000);
    assert.deepEqual(
      preempted.attempts?.map((each) => each.outcome),
      ['Preempted', 'FailedToStart'],
    );
    const earlier = withLoss(placed([attempt(a100, 'FailedToStart', at(-1))]), 'FailedToStart', NOW + 5000);
    assert.equal(earlier.attempts?.length, 2);
  });

  test('the record keeps the last 16', () => {
    const full = Array.from({ length: 16 }, (_, i) => attempt(offer(`t-${i}`), 'NoCapacity', at(-100 + i)));
    const next = withLoss(placed(full), 'FailedToStart', NOW + 5000);
    assert.equal(next.attempts?.length, 16);
    assert.equal(next.attempts?.[0]?.gpuType, 't-1');
    assert.equal(next.attempts?.[15]?.outcome, 'FailedToStart');
  });
});

describe('aboveCap', () => {
  const placement = support([]);
  test('a charge equal to the cap is within it; a cent above is not', () => {
    assert.equal(aboveCap(placement, { cap: 0.5 }, { id: '1', charged: '0.5000' }), undefined);
    assert.deepEqual(aboveCap(placement, { cap: 0.5 }, { id: '1', charged: '0.5100' }), {
      charged: '0.5100',
      cap: 0.5,
    });
  });

  test('no cap, or no charge known yet: nothing to say', () => {
    assert.equal(aboveCap(placement, {}, { id: '1', charged: '9.0000' }), undefined);
    assert.equal(aboveCap(placement, { cap: 0.5 }, { id: '1' }), undefined);
  });
});

test('isNoCapacity: only the cloud’s own code 12002', () => {
  const cloudError = (code: number) =>
    new CloudApiError({
      operation: 'widgets.create',
      creates: true,
      httpStatus: 200,
      code,
      serviceMessage: 'x',
      attempts: 1,
    });
  assert.equal(isNoCapacity(cloudError(ApiCode.NoCapacity)), true);
  assert.equal(isNoCapacity(cloudError(ApiCode.NoCapacity + 1)), false);
  assert.equal(isNoCapacity(Object.assign(new Error('x'), { code: ApiCode.NoCapacity })), false);
});

test('describeOffer names spot or on-demand', () => {
  assert.equal(
    describeOffer(offer('L40S', 'eu-west-1', true, 0.5)),
    'L40S spot in eu-west-1 at 0.5 USD/GPU-hour',
  );
});

describe('placementReport', () => {
  const adapter = { idOf: (cloud: Cloud) => cloud.id, placement: support([]) };
  const recorded: PlacementStatus = {
    gpuType: 'A100',
    region: 'us-east-1',
    spot: false,
    pricePerGpuHour: '1.0000',
    placedAt: at(0),
  };
  const report = (lost: string | undefined, status: ManagedObject<Spec>['status'], cloud: Cloud) =>
    placementReport<Spec, Cloud>(
      'Widget',
      adapter,
      lost,
    )({
      mr: resource(status, { cap: 0.5 }),
      cloud,
      phase: 'FAILED',
      now: NOW + 5000,
    });

  test('the charge is added once the cloud says it, and only to a recorded placement', () => {
    assert.deepEqual(report(undefined, { placement: recorded }, { id: '7' }).fields, { placement: recorded });
    assert.deepEqual(report(undefined, { placement: recorded }, { id: '7', charged: '0.9000' }).fields, {
      placement: { ...recorded, chargedPerGpuHour: '0.9000' },
    });
    assert.deepEqual(report(undefined, {}, { id: '7', charged: '0.9000' }).fields, { placement: undefined });
  });

  test('a failed start: the loss recorded, Ready False with why, and a Warning only when that is new', () => {
    const first = report(FAILED_TO_START, { placement: recorded }, { id: '7' });
    const message = 'Widget 7 failed before it ran (FAILED); deleting it and placing the resource again';
    assert.deepEqual(first.loss, { ready: false, reason: FAILED_TO_START, message });
    assert.deepEqual(first.warnings, [{ reason: FAILED_TO_START, message }]);
    const placement = first.fields?.placement as PlacementStatus;
    assert.deepEqual(
      placement.attempts?.map((each) => each.outcome),
      ['FailedToStart'],
    );
    const again = report(
      FAILED_TO_START,
      {
        placement: recorded,
        conditions: [
          {
            type: 'Ready',
            status: 'False',
            reason: FAILED_TO_START,
            message,
            lastTransitionTime: at(0),
            observedGeneration: 1,
          },
        ],
      },
      { id: '7' },
    );
    assert.deepEqual(again.warnings, []);
  });

  test('a preemption: recorded as Preempted; what Ready says of it is the recovery’s part', () => {
    const preempted = report('Preempted', { placement: recorded }, { id: '7' });
    const placement = preempted.fields?.placement as PlacementStatus;
    assert.deepEqual(
      placement.attempts?.map((each) => each.outcome),
      ['Preempted'],
    );
    assert.equal(preempted.loss, undefined);
  });

  test('above the cap: the charge and the cap in the message, the loss recorded as AboveCap', () => {
    const over = report(ABOVE_CAP, { placement: recorded }, { id: '7', charged: '0.9500' });
    assert.equal(
      over.loss?.message,
      'Widget 7 is charged 0.9500 USD/GPU-hour, above maxPricePerGpuHour 0.5; deleting it and placing the resource again',
    );
    const placement = over.fields?.placement as PlacementStatus;
    assert.deepEqual(
      placement.attempts?.map((each) => each.outcome),
      ['AboveCap'],
    );
  });
});
