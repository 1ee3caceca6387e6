// The query of `GET /containerLogs/...` as the apiserver sends it for `kubectl logs` (PodLogOptions, in the
// kubelet's names), read at the edge: a bad value is a 400 naming it, as the tenant API's are.
import { z } from 'zod';
import { flag, MAX_SINCE_SECONDS, readQuery, wholeNumber } from '../../serving/query.ts';

/**
 * The most lines a tail may keep: they are held in memory until the log is read to its end (the cloud
 * reads a log from its start, never from its end).
 */
export const MAX_TAIL_LINES = 10_000;
/** 2^53 - 1 would do; a petabyte is more than any log. */
const MAX_LIMIT_BYTES = 2 ** 50;

const containerLogQuery = z
  .strictObject({
    follow: flag.optional(),
    previous: flag.optional(),
    timestamps: flag.optional(),
    tailLines: wholeNumber(0, MAX_TAIL_LINES, 'lines').optional(),
    sinceSeconds: wholeNumber(1, MAX_SINCE_SECONDS, 'seconds').optional(),
    sinceTime: z.iso
      .datetime({ offset: true, error: 'must be an RFC 3339 time such as 2026-01-02T15:04:05Z' })
      .transform((text) => Date.parse(text))
      .optional(),
    limitBytes: wholeNumber(1, MAX_LIMIT_BYTES, 'bytes').optional(),
  })
  .refine((q) => q.sinceSeconds === undefined || q.sinceTime === undefined, {
    message: 'sinceSeconds and sinceTime exclude each other',
    path: ['sinceTime'],
  });

export interface ContainerLogOptions {
  readonly follow: boolean;
  readonly previous: boolean;
  readonly timestamps: boolean;
  readonly tailLines: number | undefined;
  /** Lines from this long before now on; the whole log when undefined. */
  readonly sinceMs: number | undefined;
  readonly limitBytes: number | undefined;
}

/** The options of `params`, or a 400 (ServingError) naming each one that is wrong. */
export function readContainerLogOptions(params: URLSearchParams, now: number): ContainerLogOptions {
  const q = readQuery(containerLogQuery, params);
  const sinceMs =
    q.sinceSeconds !== undefined
      ? q.sinceSeconds * 1000
      : q.sinceTime !== undefined
        ? // Never before 1970 (the cloud takes no earlier start), never after now.
          Math.min(now, Math.max(0, now - q.sinceTime))
        : undefined;
  return {
    follow: q.follow ?? false,
    previous: q.previous ?? false,
    timestamps: q.timestamps ?? false,
    tailLines: q.tailLines,
    sinceMs,
    limitBytes: q.limitBytes,
  };
}
