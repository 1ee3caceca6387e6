// Acting as another user through the admin's own connection: the apiserver's impersonation, so a test
// can run a request with exactly the permissions a namespaced tenant (or a ServiceAccount) has.
import { readFile, writeFile } from 'node:fs/promises';
import { dump, load } from 'js-yaml';
import { z } from 'zod';
import { KubeClient } from '../../src/kube/client.ts';
import type { KubeConnection } from '../../src/kube/connection.ts';

/** `user` through the admin connection of a control plane (or of the kubeconfig of `npm run local`). */
export function clientAs(plane: { readonly connection: KubeConnection }, user: string): KubeClient {
  const admin = plane.connection;
  return new KubeClient({
    server: admin.server,
    source: `${admin.source} as ${user}`,
    auth: async () => {
      const auth = await admin.auth();
      return { ...auth, headers: { ...auth.headers, 'Impersonate-User': user } };
    },
  });
}

/** Writes to `path` the admin's kubeconfig with its user impersonating `user` (`as:`), as kubectl --as does. */
export async function writeKubeconfigAs(
  plane: { readonly kubeconfigPath: string },
  user: string,
  path: string,
): Promise<string> {
  const config = z
    .looseObject({ users: z.array(z.looseObject({ user: z.record(z.string(), z.unknown()) })) })
    .parse(load(await readFile(plane.kubeconfigPath, 'utf8')));
  for (const entry of config.users) entry.user.as = user;
  await writeFile(path, dump(config), { mode: 0o600 });
  return path;
}

interface Rule {
  readonly apiGroups: readonly string[];
  readonly resources: readonly string[];
  readonly verbs: readonly string[];
}

/** A Role `name` in `namespace` with `rules`, bound to `user`. */
export function grantRole(
  admin: KubeClient,
  namespace: string,
  user: string,
  name: string,
  rules: readonly Rule[],
): Promise<void> {
  return grant(admin, { kind: 'Role', prefix: `namespaces/${namespace}/` }, user, name, rules);
}

/** A ClusterRole `name` with `rules`, bound to `user` cluster-wide (a binding of the same name). */
export function grantClusterRole(
  admin: KubeClient,
  user: string,
  name: string,
  rules: readonly Rule[],
): Promise<void> {
  return grant(admin, { kind: 'ClusterRole', prefix: '' }, user, name, rules);
}

/** A role of `scope` named `name` with `rules`, and its binding of the same name to `user`. */
async function grant(
  admin: KubeClient,
  scope: { kind: 'Role' | 'ClusterRole'; prefix: string },
  user: string,
  name: string,
  rules: readonly Rule[],
): Promise<void> {
  const { kind, prefix } = scope;
  const base = `/apis/rbac.authorization.k8s.io/v1/${prefix}`;
  await admin.request(z.unknown(), {
    method: 'POST',
    path: `${base}${kind.toLowerCase()}s`,
    body: { apiVersion: 'rbac.authorization.k8s.io/v1', kind, metadata: { name }, rules },
  });
  await admin.request(z.unknown(), {
    method: 'POST',
    path: `${base}${kind.toLowerCase()}bindings`,
    body: {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: `${kind}Binding`,
      metadata: { name },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind, name },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: user }],
    },
  });
}

/** A Role in `namespace` allowing `verbs` on the gpucloud kinds, bound to `user`. */
export function grantTenant(
  admin: KubeClient,
  namespace: string,
  user: string,
  verbs: readonly string[],
): Promise<void> {
  return grantRole(admin, namespace, user, `${user}-gpucloud`, [
    {
      apiGroups: ['gpucloud.io'],
      resources: ['gpupods', 'gpuvms', 'serverlessendpoints', 'serverlesstasks'],
      verbs,
    },
  ]);
}

/** What any workload author holds: a Role `pods` in `namespace` over its Pods, bound to `user`. */
export function grantPods(admin: KubeClient, namespace: string, user: string): Promise<void> {
  return grantRole(admin, namespace, user, 'pods', [
    {
      apiGroups: [''],
      resources: ['pods'],
      verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'],
    },
  ]);
}

/** Binds cluster-admin to a ServiceAccount: for suites that measure or test something other than RBAC. */
export async function bindClusterAdmin(
  admin: KubeClient,
  binding: string,
  serviceAccount: { namespace: string; name: string },
): Promise<void> {
  await admin.request(z.unknown(), {
    method: 'POST',
    path: '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings',
    body: {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: binding },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
      subjects: [{ kind: 'ServiceAccount', ...serviceAccount }],
    },
  });
}
