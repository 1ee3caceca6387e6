import type { HttpMethod } from '../../api/operation.ts';
import type { Route } from '../routes/route.ts';

interface Node {
  readonly literals: Map<string, Node>;
  param?: { readonly name: string; readonly node: Node };
  readonly routes: Map<string, Route>;
}

export type Match =
  | { readonly kind: 'found'; readonly route: Route; readonly params: Record<string, string> }
  | { readonly kind: 'wrong-method'; readonly allowed: readonly string[] }
  | { readonly kind: 'no-path' };

const newNode = (): Node => ({ literals: new Map(), routes: new Map() });

/**
 * Matches a request to its route by path segments; a literal segment wins over a `{param}` one at
 * the same position (`/v2/vms/types` before `/v2/vms/{id}`, `/tasks/count` before `/tasks/{taskId}`).
 */
export class RouteTable {
  readonly #root = newNode();

  constructor(routes: readonly Route[]) {
    for (const route of routes) this.#add(route);
  }

  match(method: string, path: string): Match {
    const segments = splitPath(path);
    if (segments === undefined) return { kind: 'no-path' };
    const found = this.#walk(this.#root, segments, 0, {});
    if (found === undefined) return { kind: 'no-path' };
    const route = found.node.routes.get(method);
    return route === undefined
      ? { kind: 'wrong-method', allowed: [...found.node.routes.keys()] }
      : { kind: 'found', route, params: found.params };
  }

  #add(route: Route): void {
    let node = this.#root;
    for (const segment of route.operation.path.split('/').filter(Boolean)) {
      const param = /^\{(\w+)\}$/.exec(segment)?.[1];
      if (param === undefined) {
        const next = node.literals.get(segment) ?? newNode();
        node.literals.set(segment, next);
        node = next;
      } else {
        if (node.param !== undefined && node.param.name !== param) {
          throw new Error(
            `${route.operation.path}: {${param}} clashes with {${node.param.name}} at the same position`,
          );
        }
        node.param ??= { name: param, node: newNode() };
        node = node.param.node;
      }
    }
    const method: HttpMethod = route.operation.method;
    if (node.routes.has(method)) throw new Error(`two routes for ${method} ${route.operation.path}`);
    node.routes.set(method, route);
  }

  #walk(
    node: Node,
    segments: readonly string[],
    index: number,
    params: Record<string, string>,
  ): { node: Node; params: Record<string, string> } | undefined {
    const segment = segments[index];
    if (segment === undefined) return node.routes.size > 0 ? { node, params } : undefined;
    const literal = node.literals.get(segment);
    const viaLiteral = literal && this.#walk(literal, segments, index + 1, params);
    if (viaLiteral !== undefined || node.param === undefined) return viaLiteral;
    return this.#walk(node.param.node, segments, index + 1, { ...params, [node.param.name]: segment });
  }
}

/** Path segments, percent-decoded; undefined when the path cannot be decoded. */
function splitPath(path: string): string[] | undefined {
  try {
    return path.split('/').filter(Boolean).map(decodeURIComponent);
  } catch {
    return undefined;
  }
}
