import { ruleErrors } from './cel-rules.ts';
import type { CustomKinds } from './crd.ts';
import { decode, isObject, type JsonObject } from './decode.ts';
import { type FieldError, invalidMessage } from './field-error.ts';
import { objectMetaErrors } from './object-meta.ts';
import { schemaErrors } from './schema-validation.ts';

// A create of a custom resource judged offline, in the apiserver's order: the kind must be served;
// strict decoding refuses unknown fields (400); nulls are dropped and defaults filled; a create drops the
// status of a kind with a status subresource; then ObjectMeta, the OpenAPI schema and list types, and,
// unless those found a value the rules cannot read, the CEL rules (422).

export type Admission =
  | { readonly admitted: true }
  | {
      readonly admitted: false;
      readonly code: 400 | 404 | 422;
      readonly reason: 'BadRequest' | 'NotFound' | 'Invalid';
      readonly message: string;
    };

// Errors after which the apiserver does not run the CEL rules (apiextensions' hasBlockingErr).
const BLOCKING: ReadonlySet<FieldError['type']> = new Set([
  'Unsupported value',
  'Required value',
  'Too long',
  'Too many',
  'Invalid type',
]);

// What the apiserver appends to a generateName; any five of its letters and digits would do.
const GENERATED_SUFFIX = 'x2b4d';

export function admitCreate(manifest: JsonObject, kinds: CustomKinds, defaultNamespace: string): Admission {
  const apiVersion = typeof manifest.apiVersion === 'string' ? manifest.apiVersion : '';
  const kindName = typeof manifest.kind === 'string' ? manifest.kind : '';
  const kind = kinds.find(apiVersion, kindName);
  if (kind === undefined) {
    return {
      admitted: false,
      code: 404,
      reason: 'NotFound',
      message: `no matches for kind "${kindName}" in version "${apiVersion}"`,
    };
  }
  const object = requestObject(manifest, kind.namespaced, defaultNamespace);
  const decoded = decode(object, kind.schema);
  if (decoded.unknownFields.length > 0) {
    return {
      admitted: false,
      code: 400,
      reason: 'BadRequest',
      message: `${kindName} in version "${kind.apiVersion.split('/')[1]}" cannot be handled as a ${kindName}: strict decoding error: ${decoded.unknownFields.join(', ')}`,
    };
  }
  const created = decoded.object;
  if (kind.statusSubresource) delete created.status;
  const errors = [...objectMetaErrors(created, kind.namespaced), ...schemaErrors(created, kind.schema)];
  if (errors.some((error) => BLOCKING.has(error.type))) {
    errors.push({
      type: 'Invalid value',
      path: '<nil>',
      value: null,
      detail:
        'some validation rules were not checked because the object was invalid; correct the existing errors to complete validation',
    });
  } else {
    errors.push(...ruleErrors(created, kind.schema));
  }
  if (errors.length === 0) return { admitted: true };
  const metadata = isObject(created.metadata) ? created.metadata : {};
  const group = apiVersion.split('/')[0] ?? '';
  return {
    admitted: false,
    code: 422,
    reason: 'Invalid',
    message: invalidMessage(`${kindName}.${group}`, String(metadata.name ?? ''), errors),
  };
}

/** The object as the request carries it: the namespace of the URL, a generated name for generateName. */
function requestObject(manifest: JsonObject, namespaced: boolean, defaultNamespace: string): JsonObject {
  const metadata = isObject(manifest.metadata) ? { ...manifest.metadata } : {};
  if (namespaced) metadata.namespace ??= defaultNamespace;
  else delete metadata.namespace;
  if (!metadata.name && typeof metadata.generateName === 'string' && metadata.generateName !== '') {
    metadata.name = `${metadata.generateName.slice(0, 58)}${GENERATED_SUFFIX}`;
  }
  return { ...manifest, metadata };
}
