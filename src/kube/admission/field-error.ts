// A refused field as the apiserver words it (k8s.io/apimachinery/pkg/util/validation/field), so that a
// refusal judged offline reads like the one the cluster would give: `spec.gpuCount: Invalid value: 3:
// gpuCount must be a power of 2 (1, 2, 4, 8, ...)`.

/** A path into an object: field names and list indexes. */
export type FieldPath = readonly (string | number)[];

/**
 * The field.ErrorType of the apiserver. `Invalid type` prints as `Invalid value`, but is one of the errors
 * that keep the CEL rules from running (a value of the wrong type cannot be judged by them).
 */
export type FieldErrorType =
  | 'Invalid value'
  | 'Invalid type'
  | 'Unsupported value'
  | 'Required value'
  | 'Forbidden'
  | 'Too long'
  | 'Too many'
  | 'Duplicate value';

export interface FieldError {
  readonly type: FieldErrorType;
  readonly path: string;
  /** The value shown after the type; absent when the apiserver omits it (objects and lists). */
  readonly value?: unknown;
  readonly detail?: string;
}

/**
 * A path as the apiserver prints it: `spec.env[0].key`. Map keys print as `[key]` in field.Path, and as
 * `.key` in the OpenAPI schema validator's messages (`dotKeys`).
 */
export function pathText(path: FieldPath, options: { mapKeys?: readonly number[] } = {}): string {
  let text = '';
  path.forEach((segment, index) => {
    if (typeof segment === 'number') text += `[${segment}]`;
    else if (options.mapKeys?.includes(index)) text += `[${segment}]`;
    else text += text === '' ? segment : `.${segment}`;
  });
  return text;
}

/** A value as field.Error prints it: strings quoted, numbers and booleans bare, anything else as JSON. */
export function valueText(value: unknown): string {
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint')
    return String(value);
  return canonicalJson(value);
}

/** JSON with object keys sorted, as Go's encoding/json writes a map. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, inner: unknown) =>
    inner !== null && typeof inner === 'object' && !Array.isArray(inner)
      ? Object.fromEntries(Object.entries(inner).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : inner,
  );
}

const OMITS_VALUE: ReadonlySet<FieldErrorType> = new Set(['Required value', 'Forbidden', 'Too long']);

export function fieldErrorText(error: FieldError): string {
  let body: string = error.type === 'Invalid type' ? 'Invalid value' : error.type;
  if (!OMITS_VALUE.has(error.type) && 'value' in error) body += `: ${valueText(error.value)}`;
  if (error.detail) body += `: ${error.detail}`;
  return `${error.path}: ${body}`;
}

/** The message of a 422 Invalid Status: `Kind.group "name" is invalid: ...`, several errors in brackets. */
export function invalidMessage(qualifiedKind: string, name: string, errors: readonly FieldError[]): string {
  const texts = errors.map(fieldErrorText);
  const list = texts.length === 1 ? texts[0] : `[${texts.join(', ')}]`;
  return `${qualifiedKind} "${name}" is invalid: ${list}`;
}
