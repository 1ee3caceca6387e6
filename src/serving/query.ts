// Query parameters as Kubernetes' own servers read them: Go's booleans and durations, whole numbers in a
// range, the standard parameters every path takes (`timeout`, `pretty`); a bad one is a 400 naming it.
import { z } from 'zod';
import { ServingError } from './status.ts';

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
/** Query parameters read as `schema` says, or a 400 naming each one that is wrong and what it takes. */
export function readQuery<S extends z.ZodType>(schema: S, params: URLSearchParams): z.output<S> {
  const repeated = [...new Set(params.keys())].filter((key) => params.getAll(key).length > 1);
  if (repeated.length > 0)
    throw new ServingError(400, repeated.map((key) => `${key}: given more than once`).join('; '));
  const parsed = schema.safeParse(Object.fromEntries(params));
  if (parsed.success) return parsed.data;
  throw new ServingError(400, parsed.error.issues.map(problem).join('; '));
}

function problem(issue: z.core.$ZodIssue): string {
  if (issue.code === 'unrecognized_keys')
    return issue.keys.map((key) => `${JSON.stringify(key)}: not a parameter of this path`).join('; ');
  return `${issue.path.join('.') || 'query'}: ${issue.message}`;
}
