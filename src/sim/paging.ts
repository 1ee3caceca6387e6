import { DEFAULT_PAGE, DEFAULT_PAGE_SIZE } from '../api/schemas/index.ts';

export interface Page<T> {
  readonly items: T[];
  readonly page: number;
  readonly size: number;
  readonly total: number;
  readonly pages: number;
}

/** One page of `all` (1-based); a page past the end is empty. The size cap is the schemas' job. */
export function paginate<T>(all: readonly T[], page = DEFAULT_PAGE, size = DEFAULT_PAGE_SIZE): Page<T> {
  const start = (page - 1) * size;
  return {
    items: all.slice(start, start + size),
    page,
    size,
    total: all.length,
    pages: Math.ceil(all.length / size),
  };
}
