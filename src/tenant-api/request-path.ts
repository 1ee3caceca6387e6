// The request a URL and a method make, as the apiserver's RequestInfo reads them (the apiserver has
// already authorised the same attributes before proxying; the tenant API asks again).
import type { RequestAttributes } from './authorizer.ts';
import { type Subresource, subresourceOf, TENANT_GROUP_VERSION } from './group.ts';
import { TenantApiError } from './status.ts';

export interface TenantRequest {
  readonly attributes: RequestAttributes;
  readonly subresource: Subresource;
  /** What follows the subresource: a task id. */
  readonly item: string | undefined;
  readonly query: URLSearchParams;
}

const PREFIX = `/apis/${TENANT_GROUP_VERSION}/namespaces/`;
const SEGMENT = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;
const TASK_ID = /^[A-Za-z0-9_]+$/;

/** The request `method` and `url` make; a `TenantApiError` (404, 405) for anything the API does not serve. */
export function parseRequest(method: string, url: string): TenantRequest {
  const parsed = new URL(url, 'https://tenant-api');
  if (!parsed.pathname.startsWith(PREFIX))
    throw new TenantApiError(404, `the tenant API serves no ${parsed.pathname}`);
  const parts = parsed.pathname.slice(PREFIX.length).split('/').map(decodeURIComponent);
  const [namespace = '', resource = '', name = '', sub = '', item, ...rest] = parts;
  const subresource = subresourceOf(resource, sub);
  // Only tasks have items below them: a task id, as the cloud spells them.
  const badItem = item !== undefined && (sub !== 'tasks' || !TASK_ID.test(item));
  if (!subresource || badItem || rest.length > 0 || !SEGMENT.test(namespace) || !SEGMENT.test(name)) {
    throw new TenantApiError(404, `the tenant API serves no ${parsed.pathname}`);
  }
  const verb = method === 'GET' ? 'get' : method === 'POST' ? 'create' : undefined;
  if (verb === undefined || !subresource.verbs.includes(verb) || (verb === 'create' && item !== undefined)) {
    throw new TenantApiError(
      405,
      `${method} is not allowed on ${resource}/${sub}${item === undefined ? '' : '/<id>'}: it takes ${subresource.verbs.join(', ')}`,
    );
  }
  return {
    attributes: { verb, namespace, resource, subresource: sub, name },
    subresource,
    item,
    query: parsed.searchParams,
  };
}
