// Only the leader serves the tenant API, so the leader names itself as the Service's one endpoint, as
// kube-apiserver keeps the `kubernetes` Service's endpoints: an EndpointSlice it writes when it starts
// leading and empties when it stops (unless a successor has already written its own address).
import { isIP } from 'node:net';
import { z } from 'zod';
import { isStatus, type KubeClient } from '../kube/client.ts';
import { collectionPath, objectPath, type ResourceType } from '../kube/resource-type.ts';
import type { Logger } from '../lib/logger.ts';

const endpointSlices: ResourceType = {
  group: 'discovery.k8s.io',
  version: 'v1',
  plural: 'endpointslices',
  kind: 'EndpointSlice',
  namespaced: true,
};

export interface LeaderEndpoint {
  /** The Service (without a selector) in front of the tenant API. */
  readonly namespace: string;
  readonly service: string;
  /** The Service port's name, which the slice's port must carry. */
  readonly portName: string;
  /** This pod's address (the downward API's status.podIP) and the port the tenant API listens on. */
  readonly address: string;
  readonly port: number;
}

const slice = z.looseObject({
  metadata: z.looseObject({ resourceVersion: z.string().optional() }),
  endpoints: z.array(z.looseObject({ addresses: z.array(z.string()) })).nullish(),
});

export function sliceName(endpoint: LeaderEndpoint): string {
  return `${endpoint.service}-leader`;
}

function body(endpoint: LeaderEndpoint, addresses: readonly string[], resourceVersion?: string) {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: {
      name: sliceName(endpoint),
      namespace: endpoint.namespace,
      ...(resourceVersion ? { resourceVersion } : {}),
      labels: {
        'kubernetes.io/service-name': endpoint.service,
        'endpointslice.kubernetes.io/managed-by': 'gpucloud-operator',
      },
    },
    addressType: isIP(endpoint.address) === 6 ? 'IPv6' : 'IPv4',
    endpoints: addresses.map((address) => ({ addresses: [address], conditions: { ready: true } })),
    ports: [{ name: endpoint.portName, port: endpoint.port, protocol: 'TCP' }],
  };
}

/** Names this replica the Service's endpoint while `leading` lasts, then takes its name out again. */
export async function publishWhileLeading(
  kube: KubeClient,
  endpoint: LeaderEndpoint,
  leading: AbortSignal,
  log: Logger,
): Promise<void> {
  const path = objectPath(endpointSlices, { namespace: endpoint.namespace, name: sliceName(endpoint) });
  try {
    const current = await kube.request(slice, { method: 'GET', path }).catch((error: unknown) => {
      if (isStatus(error, 404)) return undefined;
      throw error;
    });
    if (current === undefined) {
      await kube.request(z.unknown(), {
        method: 'POST',
        path: collectionPath(endpointSlices, endpoint.namespace),
        body: body(endpoint, [endpoint.address]),
      });
    } else {
      await kube.request(z.unknown(), {
        method: 'PUT',
        path,
        body: body(endpoint, [endpoint.address], current.metadata.resourceVersion),
      });
    }
    log.info(
      { address: endpoint.address, port: endpoint.port },
      'tenant API: this leader is the Service endpoint',
    );
  } catch (error) {
    log.error({ err: error }, 'tenant API: could not name this leader in the EndpointSlice');
  }
  if (!leading.aborted)
    await new Promise((resolve) => leading.addEventListener('abort', resolve, { once: true }));
  await withdraw(kube, endpoint, path, log);
}

async function withdraw(
  kube: KubeClient,
  endpoint: LeaderEndpoint,
  path: string,
  log: Logger,
): Promise<void> {
  try {
    const current = await kube.request(slice, { method: 'GET', path });
    const mine = current.endpoints?.some((each) => each.addresses.includes(endpoint.address));
    if (!mine) return;
    // Conditional on what was read: a successor that wrote its address in between keeps it.
    await kube.request(z.unknown(), {
      method: 'PUT',
      path,
      body: body(endpoint, [], current.metadata.resourceVersion),
    });
  } catch (error) {
    if (!isStatus(error, 404) && !isStatus(error, 409)) {
      log.warn({ err: error }, 'tenant API: could not take this replica out of the EndpointSlice');
    }
  }
}
