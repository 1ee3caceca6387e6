import { isObject, type JsonObject } from './decode.ts';
import type { FieldError } from './field-error.ts';

// ObjectMeta as the apiserver validates a custom resource's (apimachinery's ValidateObjectMetaAccessor
// with NameIsDNSSubdomain): the name or generateName, the namespace, label keys and values, annotation
// keys and their total size. Owner references, finalizers and managed fields are left to the cluster:
// manifests rarely carry them, and a plan judged offline says it was.

const DNS_LABEL = '[a-z0-9]([-a-z0-9]*[a-z0-9])?';
const DNS_SUBDOMAIN = `${DNS_LABEL}(\\.${DNS_LABEL})*`;
const LABEL_NAME = '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]';
const SUBDOMAIN_MESSAGE =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const LABEL_MESSAGE =
  "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const KEY_MESSAGE =
  "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const VALUE_MESSAGE =
  "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const ANNOTATIONS_LIMIT = 256 * 1024;

const full = (pattern: string) => new RegExp(`^${pattern}$`);
const regexError = (message: string, pattern: string, ...examples: string[]) =>
  `${message} (e.g. ${examples.map((example) => `'${example}', `).join(' or ')}regex used for validation is '${pattern}')`;
const maxLength = (length: number) => `must be no more than ${length} characters`;

function subdomainErrors(value: string): string[] {
  const errors = value.length > 253 ? [maxLength(253)] : [];
  if (!full(DNS_SUBDOMAIN).test(value))
    errors.push(regexError(SUBDOMAIN_MESSAGE, DNS_SUBDOMAIN, 'example.com'));
  return errors;
}

function labelErrors(value: string): string[] {
  const errors = value.length > 63 ? [maxLength(63)] : [];
  if (!full(DNS_LABEL).test(value)) {
    errors.push(
      full(DNS_SUBDOMAIN).test(value)
        ? 'must not contain dots'
        : regexError(LABEL_MESSAGE, DNS_LABEL, 'my-name', '123-abc'),
    );
  }
  return errors;
}

function labelKeyErrors(key: string): string[] {
  const parts = key.split('/');
  if (parts.length > 2) {
    return [
      `a valid label key ${regexError(KEY_MESSAGE, LABEL_NAME, 'MyName', 'my.name', '123-abc')} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`,
    ];
  }
  const [prefix, name = ''] = parts.length === 2 ? parts : [undefined, parts[0] ?? ''];
  const errors: string[] = [];
  if (prefix === '') errors.push('prefix part must be non-empty');
  else if (prefix !== undefined)
    errors.push(...subdomainErrors(prefix).map((message) => `prefix part ${message}`));
  if (name === '') errors.push('name part must be non-empty');
  else if (name.length > 63) errors.push(`name part ${maxLength(63)}`);
  if (!full(LABEL_NAME).test(name))
    errors.push(`name part ${regexError(KEY_MESSAGE, LABEL_NAME, 'MyName', 'my.name', '123-abc')}`);
  return errors;
}

/** `generateName` is a prefix: a trailing dash is allowed, the random suffix follows it. */
const asPrefix = (name: string) => name.replace(/-$/, 'a');

export function objectMetaErrors(object: JsonObject, namespaced: boolean): FieldError[] {
  const meta = isObject(object.metadata) ? object.metadata : {};
  const errors: FieldError[] = [];
  const text = (key: string) => (typeof meta[key] === 'string' ? meta[key] : '');
  const invalid = (path: string, value: string, messages: string[]) => {
    for (const detail of messages) errors.push({ type: 'Invalid value', path, value, detail });
  };
  const generateName = text('generateName');
  if (generateName !== '')
    invalid('metadata.generateName', generateName, subdomainErrors(asPrefix(generateName)));
  const name = text('name');
  if (name === '')
    errors.push({
      type: 'Required value',
      path: 'metadata.name',
      detail: 'name or generateName is required',
    });
  else invalid('metadata.name', name, subdomainErrors(name));
  const namespace = text('namespace');
  if (namespaced) {
    if (namespace === '') errors.push({ type: 'Required value', path: 'metadata.namespace' });
    else invalid('metadata.namespace', namespace, labelErrors(namespace));
  }
  for (const [key, value] of stringMap(meta.labels, 'metadata.labels', errors)) {
    invalid('metadata.labels', key, labelKeyErrors(key));
    const valueErrors = value.length > 63 ? [maxLength(63)] : [];
    if (!full(`(${LABEL_NAME})?`).test(value))
      valueErrors.push(regexError(VALUE_MESSAGE, `(${LABEL_NAME})?`, 'MyValue', 'my_value', '12345'));
    invalid('metadata.labels', value, valueErrors);
  }
  let size = 0;
  for (const [key, value] of stringMap(meta.annotations, 'metadata.annotations', errors)) {
    invalid('metadata.annotations', key, labelKeyErrors(key.toLowerCase()));
    size += Buffer.byteLength(key) + Buffer.byteLength(value);
  }
  if (size > ANNOTATIONS_LIMIT) {
    errors.push({
      type: 'Too long',
      path: 'metadata.annotations',
      detail: `may not be more than ${ANNOTATIONS_LIMIT} bytes`,
    });
  }
  return errors;
}

/** Labels and annotations are maps of strings; anything else is refused as the decoder would. */
function stringMap(value: unknown, path: string, errors: FieldError[]): Array<[string, string]> {
  if (value === undefined || value === null) return [];
  if (!isObject(value)) {
    errors.push({
      type: 'Invalid type',
      path,
      value: typeof value,
      detail: `${path} must be a map of strings`,
    });
    return [];
  }
  const entries: Array<[string, string]> = [];
  for (const [key, inner] of Object.entries(value)) {
    if (typeof inner === 'string') entries.push([key, inner]);
    else
      errors.push({ type: 'Invalid type', path: `${path}.${key}`, value: inner, detail: 'must be a string' });
  }
  return entries;
}
