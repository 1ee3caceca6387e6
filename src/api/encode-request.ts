import type { z } from 'zod';
import { type FieldIssue, fieldIssues, RequestValidationError } from './errors.ts';
import type { Operation, OperationInput } from './operation.ts';
import type { WireRequest } from './transport.ts';

/**
 * Validates the input of a call and turns it into wire form: path placeholders filled, query
 * serialised, body as JSON. Throws `RequestValidationError` listing every problem at once.
 */
export function encodeRequest<O extends Operation>(op: O, input: OperationInput<O>): WireRequest {
  if (typeof input !== 'object' || input === null) {
    throw new RequestValidationError(op.name, [
      { path: 'input', message: 'expected an object with params, query and body' },
    ]);
  }
  const issues: FieldIssue[] = [];
  const params = encodePart(op.params, input.params, 'params', issues);
  const query = encodePart(op.query, input.query, 'query', issues);
  const body = encodePart(op.body, input.body, 'body', issues);
  if (issues.length > 0) throw new RequestValidationError(op.name, issues);
  const path = fillPath(op.path, params, issues) + queryString(query, issues);
  if (issues.length > 0) throw new RequestValidationError(op.name, issues);
  return { method: op.method, path, body: body === undefined ? undefined : JSON.stringify(body) };
}

function encodePart(schema: z.ZodType, value: unknown, root: string, issues: FieldIssue[]): unknown {
  const result = schema.safeEncode(value);
  if (result.success) return result.data;
  issues.push(...fieldIssues(result.error, root));
  return undefined;
}

type Scalar = string | number | boolean;

function isScalar(value: unknown): value is Scalar {
  return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean';
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function fillPath(template: string, params: unknown, issues: FieldIssue[]): string {
  const values = isRecord(params) ? params : {};
  return template.replace(/\{([^}]+)\}/g, (_placeholder, name: string) => {
    const value = values[name];
    if (isScalar(value)) return encodeURIComponent(String(value));
    issues.push({ path: `params.${name}`, message: 'a string or number is required to fill the path' });
    return '';
  });
}

/** Arrays become repeated keys (`statusList=A&statusList=B`); undefined and null are left out. */
function queryString(query: unknown, issues: FieldIssue[]): string {
  if (query === undefined) return '';
  if (!isRecord(query)) {
    issues.push({ path: 'query', message: 'the encoded query is not an object' });
    return '';
  }
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    for (const item of Array.isArray(value) ? value : [value]) {
      if (item === undefined || item === null) continue;
      if (isScalar(item)) search.append(key, String(item));
      else issues.push({ path: `query.${key}`, message: 'only strings, numbers and booleans fit in a URL' });
    }
  }
  const text = search.toString();
  return text === '' ? '' : `?${text}`;
}
