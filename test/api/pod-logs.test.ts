import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readLogs } from '../../src/api/pod-logs.ts';
import { MAX_LOG_LINES_PER_PAGE, type PodLogsQuery } from '../../src/api/schemas/pods.ts';

test('a limit beyond one page is read page by page, never asking the cloud for more than a page', async () => {
  const asked: (number | undefined)[] = [];
  const printed: string[] = [];
  // A log of 5,000 lines, one a millisecond, served as the cloud pages it.
  const read = async (query: PodLogsQuery) => {
    asked.push(query.limit);
    const from = query.cursor === undefined ? 0 : Number(query.cursor);
    const size = Math.min(query.limit ?? 100, 5_000 - from);
    const items = Array.from({ length: size }, (_, i) => ({
      timestamp: new Date(1_700_000_000_000 + from + i).toISOString(),
      level: 'INFO' as const,
      content: `line ${from + i}`,
    }));
    return { items, nextCursor: from + size < 5_000 ? String(from + size) : null };
  };
  const signal = new AbortController().signal;
  await readLogs(read, { limit: 2_500, follow: false, pollMs: 10, signal }, (line) => {
    printed.push(line);
  });
  assert.equal(printed.length, 2_500);
  assert.match(printed.at(-1) ?? '', / line 2499$/);
  assert.deepEqual(asked, [MAX_LOG_LINES_PER_PAGE, MAX_LOG_LINES_PER_PAGE, 500]);
});
