import { z } from 'zod';
import { GpuCloudClient } from '../api/client.ts';
import { isStatus, KubeClient } from '../kube/client.ts';
import { loadKubeConnection } from '../kube/connection.ts';
import { objectPath } from '../kube/resource-type.ts';
import { readSecret } from '../kube/secrets.ts';
import { type ManagedKindName, managedKinds, providerConfigKind, resourceOf } from '../resources/kinds.ts';
import { CommandError, EXIT, usageError } from './errors.ts';
import type { TenantTarget } from './tenant-route.ts';

/** Where the CLI looks things up: the cloud directly, and the cluster when a resource is named. */
export interface Connections {
  readonly kubeconfig?: string | undefined;
  readonly context?: string | undefined;
  readonly namespace?: string | undefined;
  readonly apiKey?: string | undefined;
  readonly apiUrl?: string | undefined;
  readonly env: NodeJS.ProcessEnv;
}

/** A cloud object the command acts on, and the client of the account it lives in. */
export interface Target {
  readonly kind: ManagedKindName;
  readonly id: string;
  /** `namespace/name` of the custom resource, when one was named. */
  readonly resource?: string;
  readonly status: Record<string, unknown>;
  readonly client: GpuCloudClient;
}

const KIND_NAMES: Readonly<Record<string, ManagedKindName>> = Object.fromEntries(
  managedKinds.flatMap((kind) =>
    [kind.kind.toLowerCase(), kind.plural, kind.singular, ...kind.shortNames].map((alias) => [
      alias,
      kind.kind,
    ]),
  ),
);

const resourceSchema = z.looseObject({
  metadata: z.looseObject({ name: z.string(), namespace: z.string().optional() }),
  spec: z.looseObject({ providerConfigRef: z.object({ name: z.string() }).optional() }).optional(),
  status: z.looseObject({ id: z.string().optional() }).optional(),
});
const providerConfigSchema = z.looseObject({
  spec: z.looseObject({
    apiUrl: z.string(),
    credentials: z.object({
      secretRef: z.object({ namespace: z.string(), name: z.string(), key: z.string() }),
    }),
  }),
});

/** The kind a `kind/name` reference names, or a usage error listing what it may be. */
export function kindOf(
  reference: string,
  allowed: readonly ManagedKindName[],
): { kind: ManagedKindName; name: string } {
  const [alias = '', name = ''] = reference.split('/');
  const kind = KIND_NAMES[alias.toLowerCase()];
  if (!kind || !name || reference.split('/').length !== 2) {
    throw usageError(`"${reference}" is not a resource reference: write kind/name, e.g. ${example(allowed)}`);
  }
  if (!allowed.includes(kind)) {
    throw usageError(`this command takes ${allowed.join(' or ')}, not ${kind}: e.g. ${example(allowed)}`);
  }
  return { kind, name };
}

function example(allowed: readonly ManagedKindName[]): string {
  const kind = managedKinds.find((candidate) => candidate.kind === allowed[0]);
  return `${kind?.shortNames[0] ?? 'gpod'}/my-${kind?.singular ?? 'resource'}`;
}

/**
 * The object `reference` names (`kind/name` in the kubeconfig's cluster) or `id` (a raw cloud id, of the
 * first allowed kind), with a client holding only a key the caller may read: the key Secret of the
 * resource's ProviderConfig when the caller's own RBAC lets it read that Secret, else `--api-key` or
 * `GPUCLOUD_API_KEY`. A tenant of a shared account gets no key from the cluster.
 */
export async function resolveTarget(
  reference: string | undefined,
  id: string | undefined,
  allowed: readonly ManagedKindName[],
  connections: Connections,
): Promise<Target> {
  const [first] = allowed;
  if (!first) throw new Error('a command must allow one kind at least');
  if (id !== undefined) {
    if (reference !== undefined) throw usageError('name a resource or give --id, not both');
    return { kind: first, id, status: {}, client: cloudClient(explicitCredentials(connections, '--id')) };
  }
  if (reference === undefined) throw usageError(`name a resource (e.g. ${example(allowed)}) or give --id`);
  const { kind, name } = kindOf(reference, allowed);
  const kube = await kubeClient(connections);
  const definition = managedKinds.find((candidate) => candidate.kind === kind);
  if (!definition) throw new Error(`no definition of ${kind}`);
  const namespace = connections.namespace ?? 'default';
  const found = await kube
    .request(resourceSchema, { method: 'GET', path: objectPath(resourceOf(definition), { namespace, name }) })
    .catch((error: unknown) => {
      if (isStatus(error, 404)) {
        throw new CommandError(
          `${kind} ${namespace}/${name} not found: check the name and -n`,
          EXIT.notFound,
        );
      }
      throw error;
    });
  const cloudId = found.status?.id;
  if (!cloudId) {
    throw new CommandError(
      `${kind} ${namespace}/${name} has no status.id yet: the operator has not created or found its cloud object (kubectl describe ${reference} -n ${namespace})`,
      EXIT.notFound,
    );
  }
  const account = found.spec?.providerConfigRef?.name ?? 'default';
  const credentials =
    (await accountCredentials(kube, account)) ?? explicitCredentials(connections, reference);
  return {
    kind,
    id: cloudId,
    resource: `${namespace}/${name}`,
    status: found.status ?? {},
    client: cloudClient(credentials),
  };
}

export interface Credentials {
  apiUrl: string;
  apiKey: string;
}

function hasOwnKey(connections: Connections): boolean {
  return Boolean((connections.apiKey ?? connections.env.GPUCLOUD_API_KEY)?.trim());
}

export function explicitCredentials(connections: Connections, what: string): Credentials {
  const apiKey = connections.apiKey ?? connections.env.GPUCLOUD_API_KEY;
  const apiUrl = connections.apiUrl ?? connections.env.GPUCLOUD_API_URL;
  if (!apiKey?.trim()) {
    throw new CommandError(
      `${what} needs an API key you hold: pass --api-key or set GPUCLOUD_API_KEY (the cluster gave none you may read)`,
      EXIT.credentials,
    );
  }
  if (!apiUrl) throw usageError('pass --api-url or set GPUCLOUD_API_URL');
  return { apiKey: apiKey.trim(), apiUrl };
}

/** The account's URL and key, when the caller may read both; `undefined` otherwise. */
export async function accountCredentials(
  kube: KubeClient,
  account: string,
): Promise<Credentials | undefined> {
  try {
    const config = await kube.request(providerConfigSchema, {
      method: 'GET',
      path: objectPath(resourceOf(providerConfigKind), { namespace: '', name: account }),
    });
    const { namespace, name, key } = config.spec.credentials.secretRef;
    const apiKey = (await readSecret(kube, namespace, name))?.[key]?.trim();
    return apiKey ? { apiUrl: config.spec.apiUrl, apiKey } : undefined;
  } catch (error) {
    if (isStatus(error, 403) || isStatus(error, 404)) return undefined;
    throw error;
  }
}

export async function kubeClient(connections: Connections): Promise<KubeClient> {
  return new KubeClient(
    await loadKubeConnection({
      kubeconfigPath: connections.kubeconfig,
      context: connections.context,
      env: connections.env,
    }),
  );
}

export function cloudClient({ apiUrl, apiKey }: Credentials): GpuCloudClient {
  return new GpuCloudClient({ baseUrl: apiUrl, apiKey, retry: { maxRetries: 2 } });
}

/**
 * The way to a resource's cloud object: the cloud API, with a key the caller holds (its own, or its
 * account's Secret when its RBAC lets it read it), or, when it holds none and names a resource, the
 * Kubernetes API as its kubeconfig identity, to the operator's tenant API.
 */
export type Route =
  | { readonly via: 'cloud'; readonly target: Target }
  | { readonly via: 'apiserver'; readonly tenant: TenantTarget; readonly kind: ManagedKindName };

export async function resolveRoute(
  reference: string | undefined,
  id: string | undefined,
  allowed: readonly ManagedKindName[],
  connections: Connections,
): Promise<Route> {
  try {
    return { via: 'cloud', target: await resolveTarget(reference, id, allowed, connections) };
  } catch (error) {
    // No key, or not even a read of the resource itself: a grant on its log may still be there, as
    // `pods/log` may be granted without `pods`. The apiserver and the tenant API decide.
    const keyless =
      (error instanceof CommandError && error.exitCode === EXIT.credentials) || isStatus(error, 403);
    if (!keyless || reference === undefined || id !== undefined || hasOwnKey(connections)) throw error;
  }
  const { kind, name } = kindOf(reference, allowed);
  const definition = managedKinds.find((candidate) => candidate.kind === kind);
  if (!definition) throw new Error(`no definition of ${kind}`);
  return {
    via: 'apiserver',
    kind,
    tenant: {
      kube: await kubeClient(connections),
      plural: definition.plural,
      namespace: connections.namespace ?? 'default',
      name,
    },
  };
}
