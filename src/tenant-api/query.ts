// The query parameters of each subresource, and the task a tenant submits, read at the edge: every value
// is checked here against the range the cloud and our client accept, so a bad one is a 400 naming it, and
// nothing a tenant sends can make the cloud refuse the call (its words never reach the tenant). The
// OpenAPI documents (openapi.ts) state the same bounds.
import { z } from 'zod';
import { POD_METRICS } from '../api/pod-metrics.ts';
import { MAX_PAGE_SIZE } from '../api/schemas/common.ts';
import { MAX_METRIC_WINDOW_MS, METRIC_STEPS } from '../api/schemas/metrics.ts';
import { MAX_LOG_LINES_PER_PAGE } from '../api/schemas/pods.ts';
import { TASK_STATUSES, taskId, taskSubmitRequest } from '../api/schemas/serverless.ts';
import { flag, MAX_SINCE_SECONDS, wholeNumber } from '../serving/query.ts';

export const MAX_KEYWORD_LENGTH = 256;

export const logQuery = z.strictObject({
  follow: flag.optional(),
  sinceSeconds: wholeNumber(1, MAX_SINCE_SECONDS, 'seconds').optional(),
  limit: wholeNumber(1, MAX_LOG_LINES_PER_PAGE, 'lines').optional(),
  keyword: z
    .string()
    .min(1, 'must not be empty')
    .max(MAX_KEYWORD_LENGTH, `must be at most ${MAX_KEYWORD_LENGTH} characters`)
    .optional(),
});

const WINDOW_UNIT_MS = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
const LONGEST_WINDOW_MS = Math.max(...Object.values(MAX_METRIC_WINDOW_MS));
const WINDOWS_BY_STEP =
  'the window is longer than the step allows (30s: 3h, 5m: 12h, 15m: 2d, 1h: 7d, 4h: 30d, 1d: 90d)';

export const metricsQuery = z
  .strictObject({
    window: z
      .string()
      .regex(/^\d{1,9}[smhd]$/, 'must be a duration such as 90s, 10m, 1h or 2d')
      .transform(
        (text) => Number(text.slice(0, -1)) * WINDOW_UNIT_MS[text.slice(-1) as 's' | 'm' | 'h' | 'd'],
      )
      .pipe(
        z
          .number()
          .positive('must be longer than 0s')
          .max(LONGEST_WINDOW_MS, `must be at most ${LONGEST_WINDOW_MS / WINDOW_UNIT_MS.d}d`),
      )
      .default(3_600_000),
    step: z.enum(METRIC_STEPS, { error: `must be one of ${METRIC_STEPS.join(', ')}` }).optional(),
    series: z
      .string()
      .transform((text) => text.split(','))
      .pipe(
        z
          .array(z.enum(POD_METRICS, { error: `each must be one of ${POD_METRICS.join(', ')}` }))
          .refine((names) => new Set(names).size === names.length, 'names a series twice'),
      )
      .optional(),
  })
  .transform((q) => ({ ...q, step: q.step ?? (q.window <= 3_600_000 ? ('30s' as const) : ('5m' as const)) }))
  .refine((q) => q.window <= MAX_METRIC_WINDOW_MS[q.step], { message: WINDOWS_BY_STEP, path: ['window'] });

/** Pages beyond this are refused: no endpoint holds a million pages of tasks. */
export const MAX_TASK_PAGE = 1_000_000;

export const taskListQuery = z.strictObject({
  status: z.enum(TASK_STATUSES, { error: `must be one of ${TASK_STATUSES.join(', ')}` }).optional(),
  page: wholeNumber(1, MAX_TASK_PAGE, 'pages').optional(),
  size: wholeNumber(1, MAX_PAGE_SIZE, 'tasks').optional(),
});

export const noQuery = z.strictObject({});

/** A task id's length is ours (the cloud shows none): the path's bound, so a task submitted can be read. */
export const MAX_TASK_ID_LENGTH = 128;

/** A task as a tenant submits it: the cloud's form, with the task id bounded. */
export const taskSubmission = taskSubmitRequest.extend({
  taskId: taskId
    .max(MAX_TASK_ID_LENGTH, `taskId must be at most ${MAX_TASK_ID_LENGTH} characters`)
    .optional(),
});
