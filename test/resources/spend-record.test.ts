import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  advance,
  limitPerHour,
  monthBounds,
  type SpendRecord,
  worthWriting,
} from '../../src/resources/provider-config/spend-record.ts';

// Month to date integrated from the spend rate and checkpointed: exact figures at moved times.

const HOUR = 3_600_000;
const at = (iso: string) => Date.parse(iso);

describe('the month to date', () => {
  test('starts at 0 when first seen, then adds the trapezoid of the rates between records', () => {
    const first = advance(undefined, at('2026-11-10T00:00:00Z'), 4, [{ name: 'team', perHour: 1 }]);
    assert.equal(first.monthToDate, 0);
    assert.equal(first.month, '2026-11');
    // Two hours later the rate went from 4 to 6: (4 + 6) / 2 × 2 = 10.
    const second = advance(first, at('2026-11-10T02:00:00Z'), 6, [{ name: 'team', perHour: 3 }]);
    assert.equal(second.monthToDate, 10);
    assert.equal(second.budgets?.[0]?.monthToDate, 4);
    assert.equal(second.asOf, '2026-11-10T02:00:00.000Z');
  });

  test('a restart carries on from the checkpoint: the gap is counted once, at the rate after it', () => {
    const checkpoint: SpendRecord = {
      month: '2026-11',
      asOf: '2026-11-10T00:00:00.000Z',
      perHour: 2,
      monthToDate: 100,
      budgets: [{ name: 'team', perHour: 2, monthToDate: 50 }],
    };
    // Down for 3 hours; the rate is still 2: 100 + 2 × 3.
    const after = advance(checkpoint, at('2026-11-10T03:00:00Z'), 2, [{ name: 'team', perHour: 2 }]);
    assert.equal(after.monthToDate, 106);
    assert.equal(after.budgets?.[0]?.monthToDate, 56);
    const again = advance(after, at('2026-11-10T03:00:00Z'), 2, [{ name: 'team', perHour: 2 }]);
    assert.equal(again.monthToDate, 106, 'the same instant adds nothing');
  });

  test('a new month starts from its first instant', () => {
    const last: SpendRecord = {
      month: '2026-11',
      asOf: '2026-11-30T22:00:00.000Z',
      perHour: 10,
      monthToDate: 7_000,
    };
    const next = advance(last, at('2026-12-01T01:30:00Z'), 4, []);
    assert.equal(next.month, '2026-12');
    assert.equal(next.monthToDate, 6, '1.5 hours of December at 4 per hour');
  });

  test('a budget first seen counts from then; a budget gone is dropped', () => {
    const before: SpendRecord = {
      month: '2026-11',
      asOf: '2026-11-10T00:00:00.000Z',
      perHour: 1,
      monthToDate: 0,
      budgets: [{ name: 'old', perHour: 1, monthToDate: 9 }],
    };
    const next = advance(before, at('2026-11-10T01:00:00Z'), 1, [{ name: 'new', perHour: 1 }]);
    assert.deepEqual(
      next.budgets?.map((budget) => [budget.name, budget.monthToDate]),
      [['new', 0]],
    );
  });

  test("each budget's limit and headroom are recorded", () => {
    const next = advance(undefined, at('2026-11-10T00:00:00Z'), 5, [
      { name: 'team', perHour: 3, limit: () => 8 },
    ]);
    assert.deepEqual(next.budgets?.[0], {
      name: 'team',
      perHour: 3,
      monthToDate: 0,
      limitPerHour: 8,
      headroomPerHour: 5,
    });
  });
});

describe("a budget's limit per hour", () => {
  test('the hourly limit alone', () => {
    assert.deepEqual(limitPerHour({ maxSpendPerHour: 12 }, 1e9, at('2026-11-10T00:00:00Z')), {
      perHour: 12,
      by: 'maxSpendPerHour',
    });
  });

  test("a month's limit spread over the hours left: what it leaves, the lower of the two", () => {
    const november = monthBounds(at('2026-11-10T00:00:00Z'));
    assert.equal((november.end - november.start) / HOUR, 720);
    // At the first instant of a 720-hour month: 7200 / 720.
    assert.deepEqual(limitPerHour({ maxSpendPerMonth: 7_200 }, 0, november.start), {
      perHour: 10,
      by: 'maxSpendPerMonth',
    });
    // 360 hours left, 5400 spent: 1800 / 360.
    assert.deepEqual(
      limitPerHour({ maxSpendPerMonth: 7_200, maxSpendPerHour: 8 }, 5_400, november.start + 360 * HOUR),
      {
        perHour: 5,
        by: 'maxSpendPerMonth',
      },
    );
    assert.deepEqual(
      limitPerHour({ maxSpendPerMonth: 7_200, maxSpendPerHour: 8 }, 0, november.start + 360 * HOUR),
      {
        perHour: 8,
        by: 'maxSpendPerHour',
      },
    );
    assert.equal(
      limitPerHour({ maxSpendPerMonth: 100 }, 150, november.start).perHour,
      0,
      'spent: nothing more',
    );
  });
});

describe('a checkpoint is written', () => {
  const record = (asOf: string, perHour = 1): SpendRecord => ({
    month: asOf.slice(0, 7),
    asOf,
    perHour,
    monthToDate: 0,
  });
  test('when the rate, a budget or the month changes, or a minute has passed; not more often', () => {
    const before = record('2026-11-10T00:00:00.000Z');
    assert.equal(worthWriting(before, record('2026-11-10T00:00:30.000Z'), 60_000), false);
    assert.equal(worthWriting(before, record('2026-11-10T00:01:00.000Z'), 60_000), true);
    assert.equal(worthWriting(before, record('2026-11-10T00:00:10.000Z', 2), 60_000), true);
    assert.equal(worthWriting(undefined, before, 60_000), true);
  });
});
