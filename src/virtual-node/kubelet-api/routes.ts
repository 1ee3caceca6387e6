// The kubelet API's paths, and what each asks of the authoriser. The attributes are the kubelet's own
// (pkg/kubelet/server/auth.go): the verb from the HTTP method, resource `nodes`, the node's name, and the
// subresource from the path: `stats` for /stats, `metrics` for /metrics, `log` for /logs, `proxy` for
// everything else, /containerLogs and /exec included. A grant that works on a kubelet works here.

/** The verb the kubelet asks for each method; a method it does not map is refused before any review. */
const VERBS: Readonly<Record<string, KubeletVerb>> = {
  GET: 'get',
  POST: 'create',
  PUT: 'update',
  PATCH: 'patch',
  DELETE: 'delete',
};
export type KubeletVerb = 'get' | 'create' | 'update' | 'patch' | 'delete';

/** The streaming operations of a kubelet that gpucloud nodes do not offer. */
export const STREAMING = ['exec', 'attach', 'portForward', 'run'] as const;
export type Streaming = (typeof STREAMING)[number];

export interface PodRef {
  readonly namespace: string;
  readonly name: string;
}

export type Route =
  | { readonly kind: 'containerLogs'; readonly pod: PodRef; readonly container: string }
  | { readonly kind: 'streaming'; readonly operation: Streaming; readonly pod: PodRef }
  | { readonly kind: 'statsSummary' }
  | { readonly kind: 'resourceMetrics' }
  | { readonly kind: 'notFound' };

export interface RoutedRequest {
  readonly route: Route;
  readonly verb: KubeletVerb;
  readonly subresource: string;
}

/** The request's route and authorisation attributes; undefined for a method the kubelet does not map. */
export function routeRequest(method: string, path: string): RoutedRequest | undefined {
  const verb = VERBS[method];
  if (verb === undefined) return undefined;
  return { verb, subresource: subresourceOf(path), route: routeOf(verb, path) };
}

function subresourceOf(path: string): string {
  if (isSubpath(path, '/stats')) return 'stats';
  if (isSubpath(path, '/metrics')) return 'metrics';
  if (isSubpath(path, '/logs')) return 'log';
  return 'proxy';
}

/** `path` is `prefix` or below it, as the kubelet's isSubpath reads it. */
function isSubpath(path: string, prefix: string): boolean {
  return path === prefix || path.startsWith(`${prefix}/`);
}

function routeOf(verb: KubeletVerb, path: string): Route {
  const segments = path.split('/').slice(1).map(decodeSegment);
  // The kubelet's router is strict about a trailing slash only in that it redirects it: take it as the same.
  if (segments.at(-1) === '') segments.pop();
  if (segments.some((segment) => segment === undefined || segment === '')) return { kind: 'notFound' };
  const [head, namespace, name, container, ...rest] = segments as string[];
  if (
    head === 'containerLogs' &&
    verb === 'get' &&
    container !== undefined &&
    rest.length === 0 &&
    namespace &&
    name
  )
    return { kind: 'containerLogs', pod: { namespace, name }, container };
  const streaming = STREAMING.find((operation) => operation === head);
  if (streaming && (verb === 'get' || verb === 'create') && namespace && name && rest.length <= 1)
    return { kind: 'streaming', operation: streaming, pod: { namespace, name } };
  if (head === 'stats' && namespace === 'summary' && name === undefined && verb === 'get')
    return { kind: 'statsSummary' };
  if (head === 'metrics' && namespace === 'resource' && name === undefined && verb === 'get')
    return { kind: 'resourceMetrics' };
  return { kind: 'notFound' };
}

function decodeSegment(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}
