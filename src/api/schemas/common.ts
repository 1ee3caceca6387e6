import { z } from 'zod';

/*
 * Building blocks shared by every schema of the API.
 *
 * Wire form: what travels in JSON (and, for query parameters, in the URL). Application form: what
 * callers see. The rules of the application form: every cloud id is a string, every epoch-millisecond
 * timestamp, counter, page number and duration is a number, prices stay decimal strings (no binary
 * rounding of money), and the same field has the same type in v1 and v2.
 */

/** Page size cap shared by the client and the simulator (the spec leaves it open; docs/design.md §4.3). */
export const MAX_PAGE_SIZE = 100;
/** Defaults the service applies to paged lists when the caller leaves page or size out. */
export const DEFAULT_PAGE = 1;
export const DEFAULT_PAGE_SIZE = 10;

const INTEGER_TEXT = /^-?\d+$/;

/**
 * A 64-bit integer on the wire. Decoding accepts both a JSON string and a JSON integer, as
 * protobuf's JSON mapping does, so a payload in either form is understood.
 */
const int64Wire = z.union([
  z.string().regex(INTEGER_TEXT, 'must be an integer written as a string'),
  z.number().int(),
]);

const anyNumber = z.number().int();

/** 64-bit number sent as a string (v2 pod and serverless payloads, and every query parameter). */
export function int64AsString(app: z.ZodNumber = anyNumber) {
  return z.codec(int64Wire, app, { decode: (wire) => Number(wire), encode: (value) => String(value) });
}

/** 64-bit number sent as a JSON integer (v2 VM, v1 and metrics payloads). */
export function int64AsNumber(app: z.ZodNumber = anyNumber) {
  return z.codec(int64Wire, app, { decode: (wire) => Number(wire), encode: (value) => value });
}

/** Epoch milliseconds, as a string on the wire. */
export const epochMsAsString = int64AsString();
/** Epoch milliseconds, as a JSON integer on the wire. */
export const epochMsAsNumber = int64AsNumber();

/** A cloud id the caller supplies: decimal digits, kept as a string so no 64-bit id loses precision. */
export const cloudId = z
  .string({ error: 'must be a cloud id (a string of decimal digits)' })
  .regex(/^\d+$/, 'must be a cloud id (a string of decimal digits)');

const idWire = z.union([z.string(), z.number().int()]);

/** A cloud id that travels as a JSON string (v2 pod and serverless payloads). */
export const idAsString = z.codec(idWire, z.string(), {
  decode: (wire) => String(wire),
  encode: (id) => id,
});

/**
 * A cloud id that travels as a JSON integer (v2 VM and v1 payloads). Such an id is exact only up to
 * 2^53 on either side of the wire; that limit is the wire format's, not this client's.
 */
export const idAsNumber = z.codec(idWire, z.string(), {
  decode: (wire) => String(wire),
  encode: (id) => Number(id),
});

/** A decimal amount (price, speed) the v1 surface sends as a JSON number and v2 as a string. */
export const decimalAsNumber = z.codec(z.number(), z.string(), {
  decode: (wire) => String(wire),
  encode: (text) => Number(text),
});

/** An ISO 8601 instant (v1 timestamps), seen by callers as epoch milliseconds like every v2 timestamp. */
export const isoAsEpochMs = z.codec(z.iso.datetime({ offset: true }), z.number().int(), {
  decode: (iso) => Date.parse(iso),
  encode: (ms) => new Date(ms).toISOString(),
});

/** The v1 integer flag (0 off, 1 on) that v2 sends as a boolean. */
export const flagAsInteger = z.codec(z.union([z.literal(0), z.literal(1)]), z.boolean(), {
  decode: (flag) => flag === 1,
  encode: (on) => (on ? 1 : 0),
});

/**
 * `data` of an operation that returns nothing. The spec says null (and `true` for v2 VM delete);
 * whatever arrives is ignored, because success is decided by the envelope's code alone.
 */
export const nothing = z.codec(z.unknown(), z.null(), { decode: () => null, encode: () => null });

/** A value of an open enum that is not one of the known ones, passed through untouched. */
type UnknownValue = string & {};

/**
 * A response enum the service may extend ("values seen" in the spec). Decoding never fails on a
 * value we do not know: the operator must keep working, and show the value, when the cloud adds a
 * status. The type still lists the known values, so comparisons and completion work.
 */
export function openEnum<const T extends readonly [string, ...string[]]>(known: T) {
  return z
    .union([z.enum(known), z.custom<UnknownValue>((value) => typeof value === 'string')])
    .meta({ description: `Known values: ${known.join(', ')}; others are passed through.` });
}

/**
 * A list in the query string. Decoding accepts repeated parameters, comma-separated values, or both;
 * encoding joins with commas so every encoded query value is a single string.
 */
export const queryList = z.codec(z.union([z.string(), z.array(z.string())]), z.array(z.string()), {
  decode: (wire) =>
    [wire]
      .flat()
      .flatMap((part) => part.split(','))
      .map((value) => value.trim())
      .filter((value) => value !== ''),
  encode: (values) => values.join(','),
});

/** 1-based page number. */
export const pageNumber = z.number().int().min(1, 'page is 1-based: it must be at least 1');
/** Page size, capped so one call never asks for an unbounded page. */
export const pageSize = z
  .number()
  .int()
  .min(1, 'page size must be at least 1')
  .max(MAX_PAGE_SIZE, `page size must be at most ${MAX_PAGE_SIZE}`);

/** Paged list response of the v2 surface: `items` plus counters. */
export function pagedList<Item extends z.ZodType>(
  item: Item,
  counter: typeof int64AsString | typeof int64AsNumber,
) {
  return z.object({
    items: z.array(item),
    page: counter(),
    size: counter(),
    total: counter(),
    pages: counter(),
  });
}

export const keyValue = z.object({ key: z.string(), value: z.string() });
export type KeyValue = z.output<typeof keyValue>;

/** An environment variable a caller sends. */
export const envVarRequest = z.strictObject({
  key: z.string().min(1, 'environment variable key must not be empty'),
  value: z.string(),
});

const httpUrlPattern = /^https?:\/\/.*/;
/** A URL the service will call back (spec pattern `^https?://.*`). */
export function httpUrl(field: string, maxLength?: number) {
  const url = z.string().regex(httpUrlPattern, `${field} must be an http:// or https:// URL`);
  return maxLength === undefined
    ? url
    : url.max(maxLength, `${field} must be at most ${maxLength} characters`);
}

/** A TCP port number. */
export function port(field: string) {
  return z
    .number()
    .int(`${field} must be an integer`)
    .min(1, `${field} must be between 1 and 65535`)
    .max(65535, `${field} must be between 1 and 65535`);
}

/** Text of bounded length, with a message that names the field. */
export function text(field: string, min: number, max?: number) {
  const bounded = z.string().min(min, min === 1 ? `${field} must not be empty` : `${field} is too short`);
  return max === undefined ? bounded : bounded.max(max, `${field} must be ${min} to ${max} characters long`);
}

/** True when n is 1, 2, 4, 8, ... */
export function isPowerOfTwo(n: number): boolean {
  return Number.isInteger(n) && n > 0 && (n & (n - 1)) === 0;
}

export const gpuCountPowerOfTwo = z
  .number()
  .int('gpuCount must be an integer')
  .refine(isPowerOfTwo, 'gpuCount must be a power of 2 (1, 2, 4, 8, ...)');

/** Rejects `maxPrice` unless `isSpot` is true (pod create, v1 and v2). */
export function maxPriceNeedsSpot(request: { isSpot?: boolean | undefined; maxPrice?: number | undefined }) {
  return request.maxPrice === undefined || request.isSpot === true;
}
export const maxPriceNeedsSpotIssue = {
  message: 'maxPrice is valid only for spot pods: set isSpot to true or remove maxPrice',
  path: ['maxPrice'],
};

/** Path parameters `{id}`. */
export const idParams = z.object({ id: cloudId });

/** Operations without path parameters or query. */
export const none = z.object({});
/** Operations without a request body. */
export const noBody = z.undefined();
