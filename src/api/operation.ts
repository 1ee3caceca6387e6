import type { z } from 'zod';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/**
 * One operation of the GPU cloud API, described once and used by both sides: the client builds
 * requests from it and the simulator routes and validates with it, so the two cannot drift apart.
 *
 * Schemas are zod codecs between the wire form (what travels in JSON) and the application form
 * (what callers see): `schema.decode(wire)` on the receiving side, `schema.encode(value)` on the
 * sending side. In the application form every cloud id is a string and every epoch-millisecond
 * timestamp, counter or duration is a number, whatever the wire uses.
 */
export interface Operation<
  P extends z.ZodType = z.ZodType,
  Q extends z.ZodType = z.ZodType,
  B extends z.ZodType = z.ZodType,
  D extends z.ZodType = z.ZodType,
> {
  /** Stable name used in metrics, logs and errors, e.g. `pods.create` or `legacy.vms.list`. */
  readonly name: string;
  readonly method: HttpMethod;
  /** Path template relative to the base URL, with `{param}` placeholders, e.g. `/v2/pods/{id}`. */
  readonly path: string;
  /** Path parameters, keyed by placeholder name. */
  readonly params: P;
  readonly query: Q;
  readonly body: B;
  /** The envelope's `data` for a successful call. */
  readonly data: D;
  /**
   * True when the call makes a new cloud resource. Such a call is never retried once the request
   * may have reached the service: a second attempt could create a second, billed resource.
   */
  readonly creates: boolean;
}

export type OperationInput<O extends Operation> = {
  params: z.output<O['params']>;
  query: z.output<O['query']>;
  body: z.output<O['body']>;
};

export type OperationResult<O extends Operation> = z.output<O['data']>;
