// The request a URL and a method make, as the apiserver's RequestInfo reads them (the apiserver has
// already authorised the same attributes before proxying; the tenant API asks again). Nothing here throws
// but a `ServingError`: a path no client of ours would send is a 4xx that says what is wrong with it.
import type { RequestAttributes } from '../serving/authorizer.ts';
import { type StandardQuery, standardParameters } from '../serving/query.ts';
import { ServingError } from '../serving/status.ts';
import { type Subresource, subresourceOf, TENANT_GROUP, TENANT_GROUP_VERSION } from './group.ts';
import { MAX_TASK_ID_LENGTH } from './query.ts';

export interface TenantRequest {
  readonly attributes: RequestAttributes;
  readonly subresource: Subresource;
  /** What follows the subresource: a task id. */
  readonly item: string | undefined;
  /** The subresource's own parameters; Kubernetes' standard ones are in `standard`. */
  readonly query: URLSearchParams;
  readonly standard: StandardQuery;
}

const PREFIX = `/apis/${TENANT_GROUP_VERSION}/namespaces/`;
/** A DNS subdomain, as Kubernetes names objects (a namespace is a label, which this also admits). */
const NAME = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;
const MAX_NAME_LENGTH = 253;
/** A task id as the cloud spells them. */
const TASK_ID = /^[A-Za-z0-9_]+$/;

/** The request `method` and `url` make; a `ServingError` (400, 404, 405) for anything the API does not serve. */
export function parseRequest(method: string, url: string): TenantRequest {
  const parsed = URL.parse(url, 'https://tenant-api');
  if (!parsed) throw new ServingError(400, `the request target ${JSON.stringify(url)} is not a URL`);
  if (!parsed.pathname.startsWith(PREFIX))
    throw new ServingError(404, `the tenant API serves no ${parsed.pathname}`);
  const parts = parsed.pathname.slice(PREFIX.length).split('/').map(decodeSegment);
  const [namespace = '', resource = '', name = '', sub = '', item, ...rest] = parts;
  const subresource = subresourceOf(resource, sub);
  // Only tasks have items below them.
  if (!subresource || rest.length > 0 || (item !== undefined && sub !== 'tasks'))
    throw new ServingError(404, `the tenant API serves no ${parsed.pathname}`);
  checkName('namespace', namespace);
  checkName('name', name);
  if (item !== undefined && !(TASK_ID.test(item) && item.length <= MAX_TASK_ID_LENGTH)) {
    throw new ServingError(
      400,
      `task id ${JSON.stringify(item)}: only the characters A-Z a-z 0-9 _, 1 to ${MAX_TASK_ID_LENGTH} of them`,
    );
  }
  const verb = method === 'GET' ? 'get' : method === 'POST' ? 'create' : undefined;
  if (verb === undefined || !subresource.verbs.includes(verb) || (verb === 'create' && item !== undefined)) {
    throw new ServingError(
      405,
      `${method} is not allowed on ${resource}/${sub}${item === undefined ? '' : '/<id>'}: it takes ${subresource.verbs.join(', ')}`,
    );
  }
  const { standard, own } = standardParameters(parsed.searchParams);
  return {
    attributes: { verb, group: TENANT_GROUP, namespace, resource, subresource: sub, name },
    subresource,
    item,
    query: own,
    standard,
  };
}

/** A path segment decoded; a malformed percent-encoding (`%FF`, `%`) is the client's mistake. */
function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new ServingError(
      400,
      `the path segment ${JSON.stringify(segment)} is not valid percent-encoding of UTF-8 text`,
    );
  }
}

function checkName(what: 'namespace' | 'name', value: string): void {
  if (NAME.test(value) && value.length <= MAX_NAME_LENGTH) return;
  throw new ServingError(
    400,
    `${what} ${JSON.stringify(value)}: a Kubernetes name is lower-case letters, digits, '-' and '.', starting and ending with a letter or digit, at most ${MAX_NAME_LENGTH} characters`,
  );
}
