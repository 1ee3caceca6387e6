export interface Distribution {
  count: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

/** Nearest-rank percentiles of `values` (ms), rounded to 0.1. */
export function distribution(values: readonly number[]): Distribution {
  const sorted = [...values].sort((a, b) => a - b);
  const rank = (p: number) =>
    round(sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN);
  return { count: sorted.length, p50: rank(50), p90: rank(90), p99: rank(99), max: rank(100) };
}

export function round(value: number, digits = 1): number {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}

/** Per-minute rate of `count` observed over `ms`. */
export function perMinute(count: number, ms: number): number {
  return round((count * 60_000) / ms);
}

/** `after - before` per key, keys with no change left out. */
export function delta(before: Record<string, number>, after: Record<string, number>): Record<string, number> {
  const result: Record<string, number> = {};
  for (const [key, value] of Object.entries(after)) {
    const change = value - (before[key] ?? 0);
    if (change !== 0) result[key] = change;
  }
  return result;
}
