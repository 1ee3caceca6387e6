import { sleep } from '../lib/delay.ts';
import { MAX_LOG_LINES_PER_PAGE, type PodLogLine, type PodLogs, type PodLogsQuery } from './schemas/pods.ts';

export interface ReadLogsOptions {
  /** Lines from this long ago on; the whole log when absent. */
  sinceMs?: number | undefined;
  /** Stop after this many lines. */
  limit?: number | undefined;
  /** Only lines that contain it (the cloud filters). */
  keyword?: string | undefined;
  follow: boolean;
  /** How long to wait between two reads of the log while following. */
  pollMs: number;
  signal: AbortSignal;
  /** Called once, when the log as it was has been read (before following it): a tail is known then. */
  onCaughtUp?: (() => void | Promise<void>) | undefined;
}

/** One page of a pod's log: `client.pods.logs` of one pod, or that behind a rate budget. */
export type ReadLogPage = (query: PodLogsQuery) => Promise<PodLogs>;

/**
 * Hands each of a pod's log lines to `print` (awaited, so a slow reader holds back the next page rather
 * than the lines piling up); with `follow`, keeps reading new ones until `signal` aborts. A page ends with
 * the cursor of the next, or with none at the end of the log (docs/design.md §4.3): from there the log is
 * read again from the time of the last line printed, leaving out the lines of that millisecond already
 * printed, so no line is printed twice.
 */
export async function readLogs(
  read: ReadLogPage,
  options: ReadLogsOptions,
  print: (text: string, line: PodLogLine) => void | Promise<void>,
): Promise<void> {
  let cursor: string | undefined;
  let printed = 0;
  /** The time of the last line printed, and how many printed lines have it. */
  let last: { ms: number; lines: number } | undefined;
  let caughtUp = false;
  const startTime = options.sinceMs === undefined ? undefined : Date.now() - options.sinceMs;
  const keyword = options.keyword === undefined ? {} : { keyword: options.keyword };
  for (;;) {
    const from = cursor === undefined ? (last?.ms ?? startTime) : undefined;
    const repeated = cursor === undefined ? (last?.lines ?? 0) : 0;
    const page = await read({
      ...keyword,
      ...(cursor !== undefined ? { cursor } : from !== undefined ? { startTime: from } : {}),
      // Lines repeated from the last millisecond are asked for again: a page never asks beyond its bound.
      ...(options.limit === undefined
        ? {}
        : { limit: Math.min(MAX_LOG_LINES_PER_PAGE, options.limit - printed + repeated) }),
    });
    let skipped = 0;
    for (const line of page.items) {
      const ms = Date.parse(line.timestamp);
      if (skipped < repeated && ms === last?.ms) {
        skipped++;
        continue;
      }
      await print(`${line.timestamp} ${line.content}`, line);
      if (options.signal.aborted) return;
      printed++;
      if (Number.isFinite(ms)) last = ms === last?.ms ? { ms, lines: last.lines + 1 } : { ms, lines: 1 };
    }
    if (options.limit !== undefined && printed >= options.limit) return;
    cursor = page.nextCursor ?? undefined;
    if (cursor !== undefined && page.items.length > 0) continue;
    if (!caughtUp) {
      caughtUp = true;
      await options.onCaughtUp?.();
      if (options.signal.aborted) return;
    }
    if (!options.follow) return;
    await sleep(options.pollMs, options.signal);
    if (options.signal.aborted) return;
  }
}
