// The tenant API on the local control plane. The apiserver listens on loopback, and an Endpoints or
// EndpointSlice may not name a loopback address; but the aggregator, routing to a Service (the default),
// dials an `ExternalName` Service's host name itself. So the APIService names a Service of type
// ExternalName `localhost`, on the operator's tenant API port, and verifies the operator's certificate
// for the Service's name with the CA made here.
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { KubeClient } from '../kube/client.ts';
import { createCertificateAuthority, issueCertificate } from '../lib/x509.ts';
import { API_SERVICE_NAME, TENANT_GROUP, TENANT_VERSION } from '../tenant-api/group.ts';
import { tenantClusterRoles } from '../tenant-api/rbac.ts';
import { apply } from './manifests.ts';

export const LOCAL_TENANT_SERVICE = { namespace: 'default', name: 'gpucloud-operator-api' };

export interface LocalTenantApi {
  readonly certFile: string;
  readonly keyFile: string;
  readonly caPem: string;
}

/** A serving pair for the Service's DNS name, signed by a CA of its own, written under `dir`. */
export async function makeServingPair(dir: string): Promise<LocalTenantApi> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const { namespace, name } = LOCAL_TENANT_SERVICE;
  const ca = createCertificateAuthority('gpucloud-tenant-api-ca', 365);
  const pair = issueCertificate(ca, {
    commonName: `${name}.${namespace}.svc`,
    dnsNames: [`${name}.${namespace}.svc`, 'localhost'],
    ipAddresses: ['127.0.0.1'],
    usage: 'server',
    days: 365,
  });
  const certFile = join(dir, 'tenant-api.crt');
  const keyFile = join(dir, 'tenant-api.key');
  await writeFile(certFile, pair.certPem, { mode: 0o600 });
  await writeFile(keyFile, pair.keyPem, { mode: 0o600 });
  return { certFile, keyFile, caPem: ca.certPem };
}

/** The Service, the APIService and the aggregated ClusterRoles, pointing at the operator on `port`. */
export async function registerTenantApi(client: KubeClient, port: number, caPem: string): Promise<void> {
  const { namespace, name } = LOCAL_TENANT_SERVICE;
  await apply(client, `/api/v1/namespaces/${namespace}/services`, {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace },
    spec: { type: 'ExternalName', externalName: 'localhost', ports: [{ name: 'https', port }] },
  });
  await apply(client, '/apis/apiregistration.k8s.io/v1/apiservices', {
    apiVersion: 'apiregistration.k8s.io/v1',
    kind: 'APIService',
    metadata: { name: API_SERVICE_NAME },
    spec: {
      group: TENANT_GROUP,
      version: TENANT_VERSION,
      service: { namespace, name, port },
      caBundle: Buffer.from(caPem).toString('base64'),
      groupPriorityMinimum: 1000,
      versionPriority: 15,
    },
  });
  for (const role of tenantClusterRoles('gpucloud-operator')) {
    await apply(client, '/apis/rbac.authorization.k8s.io/v1/clusterroles', role);
  }
}
