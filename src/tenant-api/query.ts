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
import { TenantApiError } from './status.ts';

/** `true`, `1`, `t`... as Go's strconv.ParseBool reads them: what Kubernetes' servers take for a flag. */
const TRUE = ['1', 't', 'T', 'TRUE', 'true', 'True'] as const;
const FALSE = ['0', 'f', 'F', 'FALSE', 'false', 'False'] as const;
export const flag = z
  .enum([...TRUE, ...FALSE], { error: 'must be true or false' })
  .transform((text) => (TRUE as readonly string[]).includes(text));

export function wholeNumber(min: number, max: number, unit: string) {
  const range = `a whole number of ${unit} from ${min} to ${max}`;
  return z
    .string()
    .regex(/^\d{1,16}$/, `must be ${range}`)
    .transform(Number)
    .pipe(z.number().min(min, `must be ${range}`).max(max, `must be ${range}`));
}

/**
 * The longest a request that is not a followed log may run (the apiserver's default `--request-timeout`),
 * and the deadline of one whose `timeout` is 0, negative or longer, as the apiserver reads it.
 */
export const MAX_REQUEST_TIMEOUT_MS = 60_000;

const GO_DURATION_UNITS_MS: Readonly<Record<string, number>> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  μs: 1e-3,
  ms: 1,
  s: 1_000,
  m: 60_000,
  h: 3_600_000,
};
const GO_DURATION = /^[-+]?(?:0|(?:(?:\d+\.?\d*|\.\d+)(?:ns|us|µs|μs|ms|s|m|h))+)$/;
const GO_DURATION_PART = /(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)/g;

/** A Go duration (`30s`, `1m30s`, `500ms`), as kubectl's `--request-timeout` sends it, in milliseconds. */
function goDurationMs(text: string): number {
  const sign = text.startsWith('-') ? -1 : 1;
  let total = 0;
  for (const [, amount, unit] of text.matchAll(GO_DURATION_PART))
    total += Number(amount) * (GO_DURATION_UNITS_MS[unit ?? ''] ?? 0);
  return sign * total;
}

/** Kubernetes' standard query parameters, taken by every path as its own servers take them. */
const standardQuery = z.strictObject({
  /** kubectl's `--request-timeout`: the request's deadline, capped as the apiserver caps it. */
  timeout: z
    .string()
    .regex(GO_DURATION, 'must be a duration such as 30s, 1m or 500ms (kubectl --request-timeout)')
    .transform(goDurationMs)
    .transform((ms) => (ms > 0 && ms < MAX_REQUEST_TIMEOUT_MS ? ms : MAX_REQUEST_TIMEOUT_MS))
    .optional(),
  /** JSON answers indented. */
  pretty: flag.optional(),
});
export type StandardQuery = z.output<typeof standardQuery>;
const STANDARD_KEYS = Object.keys(standardQuery.shape);

/** Splits the standard parameters from the subresource's own; a bad standard one is a 400 naming it. */
export function standardParameters(params: URLSearchParams): {
  readonly standard: StandardQuery;
  readonly own: URLSearchParams;
} {
  const own = new URLSearchParams();
  const standard = new URLSearchParams();
  for (const [key, value] of params) (STANDARD_KEYS.includes(key) ? standard : own).append(key, value);
  return { standard: readQuery(standardQuery, standard), own };
}

/** Longest a `sinceSeconds` may be: ten years, so the start it makes is never before 1970 for the cloud. */
export const MAX_SINCE_SECONDS = 10 * 365 * 24 * 3600;
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

/** Query parameters read as `schema` says, or a 400 naming each one that is wrong and what it takes. */
export function readQuery<S extends z.ZodType>(schema: S, params: URLSearchParams): z.output<S> {
  const repeated = [...new Set(params.keys())].filter((key) => params.getAll(key).length > 1);
  if (repeated.length > 0)
    throw new TenantApiError(400, repeated.map((key) => `${key}: given more than once`).join('; '));
  const parsed = schema.safeParse(Object.fromEntries(params));
  if (parsed.success) return parsed.data;
  throw new TenantApiError(400, parsed.error.issues.map(problem).join('; '));
}

function problem(issue: z.core.$ZodIssue): string {
  if (issue.code === 'unrecognized_keys')
    return issue.keys.map((key) => `${JSON.stringify(key)}: not a parameter of this path`).join('; ');
  return `${issue.path.join('.') || 'query'}: ${issue.message}`;
}
