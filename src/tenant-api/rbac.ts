// The ClusterRoles that put the tenant API into the built-in `view` and `edit` roles: a namespace's viewers
// read logs, metrics and tasks, its editors also submit tasks, with no grant of their own. The chart's
// templates/tenant-api.yaml carries the same rules (test/deploy/tenant-api-chart.test.ts compares them).
import { SUBRESOURCES, TENANT_GROUP } from './group.ts';

export type ClusterRole = {
  apiVersion: 'rbac.authorization.k8s.io/v1';
  kind: 'ClusterRole';
  metadata: { name: string; labels: Record<string, string> };
  rules: Array<{ apiGroups: string[]; resources: string[]; verbs: string[] }>;
};

function role(
  name: string,
  aggregateTo: readonly string[],
  verbs: readonly ('get' | 'create')[],
): ClusterRole {
  return {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: {
      name,
      labels: Object.fromEntries(
        aggregateTo.map((to) => [`rbac.authorization.k8s.io/aggregate-to-${to}`, 'true']),
      ),
    },
    rules: verbs.map((verb) => ({
      apiGroups: [TENANT_GROUP],
      resources: SUBRESOURCES.filter((each) => each.verbs.includes(verb)).map(
        (each) => `${each.plural}/${each.subresource}`,
      ),
      verbs: [verb],
    })),
  };
}

/** `<prefix>-tenant-view` (view, edit, admin) and `<prefix>-tenant-edit` (edit, admin). */
export function tenantClusterRoles(prefix: string): ClusterRole[] {
  return [
    role(`${prefix}-tenant-view`, ['view', 'edit', 'admin'], ['get']),
    role(`${prefix}-tenant-edit`, ['edit', 'admin'], ['create']),
  ];
}
