// The tenant API as the tests see it: the operator serving it on loopback, registered with the real
// apiserver as an APIService (an ExternalName Service of localhost), tenants bound to the built-in roles.
import type { IncomingHttpHeaders } from 'node:http';
import { type Agent, request } from 'node:https';
import { join } from 'node:path';
import { after, before } from 'node:test';
import { z } from 'zod';
import type { KubeClient } from '../../src/kube/client.ts';
import type { ResourceType } from '../../src/kube/resource-type.ts';
import { type RunningControllerManager, startControllerManager } from '../../src/local/controller-manager.ts';
import { freeLoopbackPorts } from '../../src/local/controlplane/ports.ts';
import type { ControlPlane } from '../../src/local/controlplane.ts';
import { LOCAL_TENANT_SERVICE, makeServingPair, registerTenantApi } from '../../src/local/tenant-api.ts';
import { API_SERVICE_NAME } from '../../src/tenant-api/group.ts';
import {
  isReady,
  manifests,
  type RunningOperator,
  resources,
  type Stack,
  startOperator,
  type TestObject,
} from '../support/operator.ts';
import { poll } from '../support/until.ts';

export interface TenantApiSetup {
  readonly port: number;
  /** The CA of the operator's serving certificate (the APIService's caBundle). */
  readonly caPem: string;
  readonly flags: string[];
  /** Registers the APIService and waits until the aggregator calls it Available. */
  register(client: KubeClient): Promise<void>;
}

export async function tenantApiSetup(
  plane: ControlPlane,
  extraFlags: string[] = [],
  /** Where its serving pair is written, under the plane's data directory: one per replica. */
  dir = 'tenant-api',
): Promise<TenantApiSetup> {
  const [port = 0] = await freeLoopbackPorts(1);
  const pair = await makeServingPair(join(plane.dataDir, dir));
  return {
    port,
    caPem: pair.caPem,
    flags: [
      '--tenant-api-port',
      String(port),
      '--tenant-api-bind-address',
      '127.0.0.1',
      '--tenant-api-cert-file',
      pair.certFile,
      '--tenant-api-key-file',
      pair.keyFile,
      ...extraFlags,
    ],
    register: async (client) => {
      await registerTenantApi(client, port, pair.caPem);
      await poll(
        () => apiServiceAvailable(client),
        (available) => available === 'True',
        `APIService ${API_SERVICE_NAME} Available`,
        60_000,
      );
    },
  };
}

const apiService = z.looseObject({
  status: z
    .looseObject({ conditions: z.array(z.looseObject({ type: z.string(), status: z.string() })).optional() })
    .optional(),
});

export async function apiServiceAvailable(client: KubeClient): Promise<string | undefined> {
  const found = await client.request(apiService, {
    method: 'GET',
    path: `/apis/apiregistration.k8s.io/v1/apiservices/${API_SERVICE_NAME}`,
  });
  return found.status?.conditions?.find((c) => c.type === 'Available')?.status;
}

/** Binds the built-in ClusterRole `role` in `namespace` to a user and a ServiceAccount of the same name. */
export async function bindRole(
  client: KubeClient,
  namespace: string,
  role: string,
  who: string,
): Promise<void> {
  await client.request(z.unknown(), {
    method: 'POST',
    path: `/api/v1/namespaces/${namespace}/serviceaccounts`,
    body: { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: who } },
  });
  await client.request(z.unknown(), {
    method: 'POST',
    path: `/apis/rbac.authorization.k8s.io/v1/namespaces/${namespace}/rolebindings`,
    body: {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: `${who}-${role}` },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
      subjects: [
        { apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: who },
        { kind: 'ServiceAccount', name: who, namespace },
      ],
    },
  });
}

/** A kubeconfig for the ServiceAccount `who` of `namespace`: a tenant's own credentials. */
export async function serviceAccountKubeconfig(
  plane: ControlPlane,
  client: KubeClient,
  namespace: string,
  who: string,
): Promise<string> {
  const answer = await client.request(z.object({ status: z.object({ token: z.string() }) }), {
    method: 'POST',
    path: `/api/v1/namespaces/${namespace}/serviceaccounts/${who}/token`,
    body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 3600 } },
  });
  return plane.kubeconfigForToken(answer.status.token, `${namespace}.${who}`);
}

export interface DirectRequest {
  readonly path: string;
  readonly method?: string;
  /** The user the front proxy names; without it the request carries no client certificate at all. */
  readonly identity?: { readonly user: string; readonly groups?: readonly string[] };
  readonly body?: string | Buffer;
  /** A keep-alive agent, to send several requests over one connection. */
  readonly agent?: Agent;
}

export interface DirectAnswer {
  readonly code: number;
  readonly body: string;
  readonly headers: IncomingHttpHeaders;
  /** Whether the request went over a connection an earlier one had used. */
  readonly reusedSocket: boolean;
}

/** Straight to the operator's port, as the apiserver dials it: TLS to the Service's name, the front proxy's pair. */
export function direct(
  plane: ControlPlane,
  setup: TenantApiSetup,
  options: DirectRequest,
): Promise<DirectAnswer> {
  const proxy = plane.frontProxy;
  const { identity } = options;
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: setup.port,
        path: options.path,
        method: options.method ?? 'GET',
        servername: `${LOCAL_TENANT_SERVICE.name}.${LOCAL_TENANT_SERVICE.namespace}.svc`,
        ca: setup.caPem,
        ...(options.agent ? { agent: options.agent } : {}),
        ...(identity ? { cert: proxy.certPem, key: proxy.keyPem } : {}),
        headers: {
          ...(identity
            ? {
                'X-Remote-User': identity.user,
                'X-Remote-Group': [...(identity.groups ?? ['system:authenticated'])],
              }
            : { 'X-Remote-User': 'system:admin', 'X-Remote-Group': 'system:masters' }),
          ...(options.body === undefined ? {} : { 'content-type': 'application/json' }),
        },
      },
      (res) => {
        let body = '';
        res.on('data', (chunk) => (body += chunk));
        res.on('end', () =>
          resolve({ code: res.statusCode ?? 0, body, headers: res.headers, reusedSocket: req.reusedSocket }),
        );
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

/** The open-follows gauge, summed over accounts, as the operator's `/metrics` reports it. */
export async function openFollows(operator: RunningOperator): Promise<number> {
  const { body } = await operator.fetchHealth('/metrics');
  return body
    .split('\n')
    .filter((line) => line.startsWith('gpucloud_tenant_api_log_streams{'))
    .reduce((sum, line) => sum + Number(line.split(' ').at(-1)), 0);
}

export interface TenantWorldOptions {
  /** Operator flags beyond the tenant API's own. */
  readonly flags: readonly string[];
  /** Who holds which built-in role where: `[namespace, role, who]`. */
  readonly bindings: ReadonlyArray<readonly [string, string, string]>;
  /** Resources made before the tests and waited for until Ready, in this order. */
  readonly objects: ReadonlyArray<{
    resource: ResourceType;
    namespace: string;
    manifest: Record<string, unknown>;
  }>;
  /** True once the aggregated roles serve what the tests need (the controller-manager takes a moment). */
  readonly served: (plane: ControlPlane) => Promise<boolean>;
}

export interface TenantWorld {
  operator(): RunningOperator;
  setup(): TenantApiSetup;
  /** The `objects` as they were once Ready, in their order. */
  ready(): ReadonlyArray<TestObject | undefined>;
}

/**
 * The tenant API as a tenant meets it: the operator serving it, registered with the apiserver, the
 * aggregation controller folding its rules into `view` and `edit`, tenants bound, their resources Ready.
 * Call it inside the `describe` whose tests use it: the stack's own hook must have run first.
 */
export function useTenantWorld(stack: Stack, options: TenantWorldOptions): TenantWorld {
  let operator: RunningOperator | undefined;
  let controllers: RunningControllerManager | undefined;
  let setup: TenantApiSetup | undefined;
  let ready: ReadonlyArray<TestObject | undefined> = [];
  before(async () => {
    const plane = stack.plane();
    const cluster = stack.cluster();
    controllers = await startControllerManager(plane, {
      controllers: ['clusterrole-aggregation-controller'],
    });
    const namespaces = new Set([
      ...options.bindings.map(([namespace]) => namespace),
      ...options.objects.map((o) => o.namespace),
    ]);
    for (const namespace of namespaces) await cluster.ensureNamespace(namespace);
    setup = await tenantApiSetup(plane, [...options.flags]);
    operator = await startOperator(plane, stack.sim(), { flags: setup.flags });
    await setup.register(cluster.client);
    for (const [namespace, role, who] of options.bindings)
      await bindRole(cluster.client, namespace, role, who);
    for (const { resource, namespace, manifest } of options.objects)
      await cluster.create(resource, namespace, manifest);
    ready = await Promise.all(
      options.objects.map(({ resource, namespace, manifest }) =>
        cluster.waitFor(
          resource,
          namespace,
          String((manifest.metadata as { name: string }).name),
          isReady(),
          'Ready',
        ),
      ),
    );
    await poll(
      () => options.served(plane),
      (served) => served,
      'the aggregated roles to serve the tenant API',
      30_000,
    );
  });
  after(async () => {
    await operator?.stop();
    await controllers?.stop();
  });
  const required = <T>(value: T | undefined, what: string): T => {
    if (value === undefined) throw new Error(`the ${what} is available only inside tests`);
    return value;
  };
  return {
    operator: () => required(operator, 'operator'),
    setup: () => required(setup, 'tenant API setup'),
    ready: () => ready,
  };
}

/** A pod `trainer` in `team` and an endpoint `queue` in both namespaces: what the edge tests read. */
export function podAndQueues(team: string, other: string): TenantWorldOptions['objects'] {
  return [
    { resource: resources.gpuPod, namespace: team, manifest: manifests.gpuPod('trainer') },
    {
      resource: resources.serverlessEndpoint,
      namespace: team,
      manifest: manifests.serverlessEndpoint('queue'),
    },
    {
      resource: resources.serverlessEndpoint,
      namespace: other,
      manifest: manifests.serverlessEndpoint('queue'),
    },
  ];
}
