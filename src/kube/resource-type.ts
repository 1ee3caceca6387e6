import type { ObjectKey } from './object.ts';

/**
 * Where a kind lives in the API. Given explicitly instead of discovered, so the runtime makes no
 * discovery calls and works the same for built-in kinds and custom resources.
 */
export interface ResourceType {
  /** API group, `''` for the core group. */
  readonly group: string;
  readonly version: string;
  /** Lower-case plural used in URLs, e.g. `configmaps`. */
  readonly plural: string;
  readonly kind: string;
  readonly namespaced: boolean;
}

export function apiVersionOf(resource: ResourceType): string {
  return resource.group === '' ? resource.version : `${resource.group}/${resource.version}`;
}

function groupVersionPath(resource: ResourceType): string {
  return resource.group === '' ? `/api/${resource.version}` : `/apis/${resource.group}/${resource.version}`;
}

/** Collection URL; without a namespace a namespaced kind is listed across all namespaces. */
export function collectionPath(resource: ResourceType, namespace?: string): string {
  const scope =
    resource.namespaced && namespace !== undefined && namespace !== ''
      ? `/namespaces/${encodeURIComponent(namespace)}`
      : '';
  return `${groupVersionPath(resource)}${scope}/${resource.plural}`;
}

export function objectPath(resource: ResourceType, key: ObjectKey): string {
  return `${collectionPath(resource, key.namespace)}/${encodeURIComponent(key.name)}`;
}

export const configMaps: ResourceType = {
  group: '',
  version: 'v1',
  plural: 'configmaps',
  kind: 'ConfigMap',
  namespaced: true,
};
export const namespaces: ResourceType = {
  group: '',
  version: 'v1',
  plural: 'namespaces',
  kind: 'Namespace',
  namespaced: false,
};

export const secrets: ResourceType = {
  group: '',
  version: 'v1',
  plural: 'secrets',
  kind: 'Secret',
  namespaced: true,
};
/** Applied by the local stack from examples/ (an app reading a connection Secret); never watched. */
export const deployments: ResourceType = {
  group: 'apps',
  version: 'v1',
  plural: 'deployments',
  kind: 'Deployment',
  namespaced: true,
};
export const coreEvents: ResourceType = {
  group: '',
  version: 'v1',
  plural: 'events',
  kind: 'Event',
  namespaced: true,
};
export const leases: ResourceType = {
  group: 'coordination.k8s.io',
  version: 'v1',
  plural: 'leases',
  kind: 'Lease',
  namespaced: true,
};
export const nodes: ResourceType = {
  group: '',
  version: 'v1',
  plural: 'nodes',
  kind: 'Node',
  namespaced: false,
};
export const pods: ResourceType = {
  group: '',
  version: 'v1',
  plural: 'pods',
  kind: 'Pod',
  namespaced: true,
};
