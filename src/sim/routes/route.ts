import type { z } from 'zod';
import type { Operation, OperationInput, OperationResult } from '../../api/operation.ts';
import { invalid } from '../errors.ts';
import type { Caller } from '../keys.ts';

/** A request as it arrived: path parameters and query in wire form, body as parsed JSON. */
export interface RawInput {
  readonly params: Record<string, string>;
  readonly query: Record<string, string | string[]>;
  readonly body: unknown;
}

export type Call<O extends Operation> = OperationInput<O> & { readonly caller: Caller };

/** One operation bound to what the simulator does for it. */
export interface Route {
  readonly operation: Operation;
  /** Validates the raw input, carries the operation out and returns the envelope's `data` in wire form. */
  execute(raw: RawInput, caller: Caller): unknown;
}

/**
 * Binds an operation to its implementation. Input is decoded and answers are encoded with the
 * operation's own schemas, the ones the client uses, so both sides keep one contract.
 */
export function route<O extends Operation>(operation: O, run: (call: Call<O>) => OperationResult<O>): Route {
  return {
    operation,
    execute(raw, caller) {
      const params = decode<O['params']>(operation.params, raw.params, 'path');
      const query = decode<O['query']>(operation.query, raw.query, 'query');
      const body = decode<O['body']>(operation.body, raw.body, 'body');
      return operation.data.encode(run({ params, query, body, caller }));
    },
  };
}

/** Wire form to application form; for codecs `safeParse` is the decoding direction. */
function decode<S extends z.ZodType>(schema: S, wire: unknown, where: string): z.output<S> {
  const result = schema.safeParse(wire);
  if (result.success) return result.data;
  throw invalid(describeIssues(where, result.error.issues));
}

/** One readable line per problem, each naming the field, e.g. `body.gpuCount: must be a power of 2`. */
export function describeIssues(where: string, issues: readonly z.core.$ZodIssue[]): string {
  return issues
    .map((issue) => {
      const field = [where, ...issue.path.map(String)].join('.');
      return where === 'body' && issue.path.length === 0 && issue.code === 'invalid_type'
        ? `body: ${issue.expected === 'undefined' ? 'this operation takes no body' : `expected a JSON ${issue.expected}`}`
        : `${field}: ${issue.message}`;
    })
    .join('; ');
}
