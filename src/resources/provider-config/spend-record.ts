import { z } from 'zod';

/*
 * Month to date, as an account's ProviderConfig status records it. The API reports each object's lifetime
 * running time, not what it ran this month, and bills objects nobody manages too: so the operator
 * integrates the spend rate it counts (every object of the account that holds GPUs, priced) over time,
 * and checkpoints the sum in the status. A restart or a new leader carries on from the checkpoint, and
 * counts the gap since it at the rate it sees then: nothing is lost or counted twice; what changed in the
 * gap is counted at the rate after it.
 */

/** One budget's spend: per hour now, and this month so far, in US dollars. */
export const budgetSpendSchema = z
  .object({
    name: z.string().max(63).describe('The budget.'),
    perHour: z.number().min(0).describe('Dollars per hour the objects it covers cost now.'),
    monthToDate: z.number().min(0).describe('Dollars spent this month (UTC) by what it covers, as counted.'),
    limitPerHour: z
      .number()
      .min(0)
      .optional()
      .describe(
        'What it allows per hour now: maxSpendPerHour, or what maxSpendPerMonth leaves spread over the hours left in the month, whichever is lower.',
      ),
    headroomPerHour: z
      .number()
      .optional()
      .describe('limitPerHour less perHour: what a new create may add now (negative: over).'),
  })
  .describe("One budget's spend and headroom.");

export const spendRecordSchema = z
  .object({
    month: z
      .string()
      .regex(/^\d{4}-\d{2}$/)
      .describe('The month (UTC, YYYY-MM) monthToDate counts.'),
    asOf: z.iso.datetime().describe('When the record was taken: the next one counts from here.'),
    perHour: z
      .number()
      .min(0)
      .describe('Dollars per hour every object of the account that holds GPUs costs now, managed or not.'),
    monthToDate: z.number().min(0).describe('Dollars spent this month by the whole account, as counted.'),
    budgets: z.array(budgetSpendSchema).max(32).optional().describe('Each budget, in the order of the spec.'),
  })
  .describe(
    "The account's spend: the rate now and the month to date, integrated from the rate the operator counts " +
      'and checkpointed here, so a restart neither loses nor double-counts it (docs/spend.md).',
  );

export type SpendRecord = z.output<typeof spendRecordSchema>;
export type BudgetSpend = z.output<typeof budgetSpendSchema>;

const HOUR_MS = 3_600_000;

/** The UTC month of `at`, as YYYY-MM. */
export function monthOf(at: number): string {
  return new Date(at).toISOString().slice(0, 7);
}

/** The first instant of the UTC month of `at`, and of the next one. */
export function monthBounds(at: number): { start: number; end: number } {
  const date = new Date(at);
  const start = Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1);
  const end = Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 1);
  return { start, end };
}

/**
 * What was spent between the previous record and `now`: the trapezoid of the rate then and the rate now
 * (the gap after a restart included); from the first instant of a new month when the month turned.
 */
function spentSince(
  previous: { at: number; perHour: number; total: number; month: string } | undefined,
  perHour: number,
  now: number,
): number {
  if (previous === undefined) return 0;
  const { start } = monthBounds(now);
  if (previous.month !== monthOf(now)) return (perHour * Math.max(0, now - start)) / HOUR_MS;
  const hours = Math.max(0, now - previous.at) / HOUR_MS;
  return previous.total + ((previous.perHour + perHour) / 2) * hours;
}

/** The record carried forward to `now`, at the rates counted now (account-wide and per budget). */
export function advance(
  previous: SpendRecord | undefined,
  now: number,
  perHour: number,
  budgets: ReadonlyArray<{ name: string; perHour: number; limit?: (monthToDate: number) => number }>,
): SpendRecord {
  const at = previous ? Date.parse(previous.asOf) : Number.NaN;
  const base = previous && Number.isFinite(at) ? { at, month: previous.month } : undefined;
  const monthToDate = spentSince(
    base && { ...base, perHour: previous?.perHour ?? 0, total: previous?.monthToDate ?? 0 },
    perHour,
    now,
  );
  return {
    month: monthOf(now),
    asOf: new Date(now).toISOString(),
    perHour,
    monthToDate,
    budgets: budgets.map((budget) => {
      const before = previous?.budgets?.find((entry) => entry.name === budget.name);
      const spent = spentSince(
        base && before && { ...base, perHour: before.perHour, total: before.monthToDate },
        budget.perHour,
        now,
      );
      const limitPerHour = budget.limit?.(spent);
      return {
        name: budget.name,
        perHour: budget.perHour,
        monthToDate: spent,
        ...(limitPerHour === undefined || !Number.isFinite(limitPerHour)
          ? {}
          : { limitPerHour, headroomPerHour: limitPerHour - budget.perHour }),
      };
    }),
  };
}

/**
 * A budget's limit per hour at `now`: its hourly limit, or what its monthly limit leaves after
 * `monthToDate`, spread over the hours left in the month, whichever is lower. At the first instant of a
 * month that is the monthly limit over the month's hours; a month spent slowly allows more later, one
 * spent fast less.
 */
export function limitPerHour(
  budget: { maxSpendPerHour?: number | undefined; maxSpendPerMonth?: number | undefined },
  monthToDate: number,
  now: number,
): { perHour: number; by: 'maxSpendPerHour' | 'maxSpendPerMonth' } {
  const hourly = budget.maxSpendPerHour ?? Number.POSITIVE_INFINITY;
  if (budget.maxSpendPerMonth === undefined) return { perHour: hourly, by: 'maxSpendPerHour' };
  const hoursLeft = Math.max(1 / 60, (monthBounds(now).end - now) / HOUR_MS);
  const monthly = Math.max(0, budget.maxSpendPerMonth - monthToDate) / hoursLeft;
  return monthly < hourly
    ? { perHour: monthly, by: 'maxSpendPerMonth' }
    : { perHour: hourly, by: 'maxSpendPerHour' };
}

/** Whether the record changed enough to be written: a new month, a rate, a budget, or a minute passed. */
export function worthWriting(
  before: SpendRecord | undefined,
  next: SpendRecord,
  checkpointMs: number,
): boolean {
  if (before === undefined || before.month !== next.month || before.perHour !== next.perHour) return true;
  const rates = (record: SpendRecord) =>
    JSON.stringify(record.budgets?.map((b) => [b.name, b.perHour, b.limitPerHour]));
  if (rates(before) !== rates(next)) return true;
  return Date.parse(next.asOf) - Date.parse(before.asOf) >= checkpointMs;
}
