// The tenant API's group, its resources, and the discovery documents the aggregator reads.
import { type ManagedKindName, managedKinds } from '../resources/kinds.ts';

/** A group of its own: `gpucloud.io` is the CRDs', served by the apiserver itself. */
export const TENANT_GROUP = 'tenant.gpucloud.io';
export const TENANT_VERSION = 'v1alpha1';
export const TENANT_GROUP_VERSION = `${TENANT_GROUP}/${TENANT_VERSION}`;
/** The APIService's name, as the aggregator requires it: `<version>.<group>`. */
export const API_SERVICE_NAME = `${TENANT_VERSION}.${TENANT_GROUP}`;

/**
 * What the tenant API serves: subresources of the custom resources, each named `<plural>/<subresource>`
 * as RBAC names them, with the verbs a Role grants on it (and the SubjectAccessReview asks for).
 */
export interface Subresource {
  readonly kind: ManagedKindName;
  readonly plural: string;
  readonly subresource: 'log' | 'metrics' | 'tasks';
  readonly verbs: readonly ('get' | 'create')[];
  /** What `get` answers: `text/plain` lines, or JSON. */
  readonly kindOfAnswer: string;
}

function pluralOf(kind: ManagedKindName): string {
  const definition = managedKinds.find((each) => each.kind === kind);
  if (!definition) throw new Error(`no managed kind ${kind}`);
  return definition.plural;
}

export const SUBRESOURCES: readonly Subresource[] = [
  {
    kind: 'GpuPod',
    plural: pluralOf('GpuPod'),
    subresource: 'log',
    verbs: ['get'],
    kindOfAnswer: 'GpuPodLog',
  },
  {
    kind: 'GpuPod',
    plural: pluralOf('GpuPod'),
    subresource: 'metrics',
    verbs: ['get'],
    kindOfAnswer: 'GpuPodMetrics',
  },
  {
    kind: 'ServerlessEndpoint',
    plural: pluralOf('ServerlessEndpoint'),
    subresource: 'tasks',
    verbs: ['get', 'create'],
    kindOfAnswer: 'ServerlessTaskList',
  },
];

export function subresourceOf(plural: string, subresource: string): Subresource | undefined {
  return SUBRESOURCES.find((each) => each.plural === plural && each.subresource === subresource);
}

/**
 * The discovery document at `path`, or undefined when `path` is not one. Legacy discovery (`/apis`,
 * the group, the version): the aggregator falls back to it for a server that does not serve the
 * aggregated form, and checks the version's document to call the APIService available.
 */
export function discoveryDocument(path: string): object | undefined {
  const version = { groupVersion: TENANT_GROUP_VERSION, version: TENANT_VERSION };
  const group = {
    kind: 'APIGroup',
    apiVersion: 'v1',
    name: TENANT_GROUP,
    versions: [version],
    preferredVersion: version,
  };
  switch (path.replace(/\/+$/, '')) {
    case '/apis':
      return { kind: 'APIGroupList', apiVersion: 'v1', groups: [group] };
    case `/apis/${TENANT_GROUP}`:
      return group;
    case `/apis/${TENANT_GROUP_VERSION}`:
      return {
        kind: 'APIResourceList',
        apiVersion: 'v1',
        groupVersion: TENANT_GROUP_VERSION,
        resources: SUBRESOURCES.map((each) => ({
          name: `${each.plural}/${each.subresource}`,
          singularName: '',
          namespaced: true,
          kind: each.kindOfAnswer,
          verbs: each.verbs,
        })),
      };
    default:
      return undefined;
  }
}
