import type { PodLogLine, PodLogs, PodLogsQuery } from '../../api/schemas/index.ts';
import { MAX_LOG_LINES_PER_PAGE } from '../../api/schemas/pods.ts';
import { invalid } from '../errors.ts';

export type LogType = 'CONTAINER' | 'SYSTEM';
type Level = PodLogLine['level'];

interface Entry {
  readonly time: number;
  readonly type: LogType;
  readonly level: Level;
  readonly content: string;
}

/** Lines one page returns when the caller sets no limit (the most it may ask for: MAX_LOG_LINES_PER_PAGE). */
export const DEFAULT_LOG_LIMIT = 100;

/**
 * A pod's log: platform events (SYSTEM) and what its container prints (CONTAINER), in order. The
 * cursor is the position after the last line a page examined, so paging never skips nor repeats.
 */
export class PodLog {
  readonly #entries: Entry[] = [];

  append(time: number, type: LogType, level: Level, content: string): void {
    this.#entries.push({ time, type, level, content });
  }

  read(query: PodLogsQuery): PodLogs {
    const { type = 'CONTAINER', limit = DEFAULT_LOG_LIMIT, startTime, endTime, keyword } = query;
    if (limit > MAX_LOG_LINES_PER_PAGE)
      throw invalid(`query.limit: at most ${MAX_LOG_LINES_PER_PAGE} lines per page`);
    const items: PodLogLine[] = [];
    let position = this.#start(query.cursor);
    for (; position < this.#entries.length && items.length < limit; position++) {
      const entry = this.#entries[position] as Entry;
      if (entry.type !== type) continue;
      if (startTime !== undefined && entry.time < startTime) continue;
      if (endTime !== undefined && entry.time > endTime) continue;
      if (keyword !== undefined && !entry.content.includes(keyword)) continue;
      items.push({
        timestamp: new Date(entry.time).toISOString(),
        level: entry.level,
        content: entry.content,
      });
    }
    return { items, nextCursor: position < this.#entries.length ? String(position) : null };
  }

  #start(cursor: string | undefined): number {
    if (cursor === undefined || cursor === '') return 0;
    const position = /^\d+$/.test(cursor) ? Number(cursor) : Number.NaN;
    if (!(position <= this.#entries.length)) {
      throw invalid('query.cursor: not a cursor this log issued; pass the nextCursor of the previous page');
    }
    return position;
  }
}
