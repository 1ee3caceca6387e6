// The serving certificate when no one else provides it: generated once by the operator, kept in a Secret
// of its namespace, and its CA written into the APIService's caBundle. Nothing of it is rendered by the
// chart, so `helm template` (and with it Argo CD) renders the same manifests every time and stays Synced,
// and the certificate survives upgrades; deleting the Secret makes the next start issue a new one.
import { z } from 'zod';
import { isStatus, type KubeClient } from '../kube/client.ts';
import { createCertificateAuthority, issueCertificate } from '../lib/x509.ts';
import { API_SERVICE_NAME } from './group.ts';

export interface ServingPair {
  readonly certPem: string;
  readonly keyPem: string;
  readonly caPem: string;
}

const CERT = 'tls.crt';
const KEY = 'tls.key';
const CA = 'ca.crt';
/** Ten years: a rotation is deleting the Secret and restarting the operator. */
const VALID_DAYS = 3650;

const secretSchema = z.looseObject({
  data: z.record(z.string(), z.string()).optional(),
});

const decode = (text: string | undefined) =>
  text === undefined ? '' : Buffer.from(text, 'base64').toString();

/**
 * The pair in Secret `namespace/secret`, made for Service `service` when the Secret does not exist yet.
 * Replicas starting together race on the create; the loser reads what the winner wrote.
 */
export async function ensureServingSecret(
  kube: KubeClient,
  namespace: string,
  secret: string,
  service: string,
): Promise<ServingPair> {
  const path = `/api/v1/namespaces/${namespace}/secrets/${secret}`;
  const read = async (): Promise<ServingPair | undefined> => {
    const found = await kube.request(secretSchema, { method: 'GET', path }).catch((error: unknown) => {
      if (isStatus(error, 404)) return undefined;
      throw error;
    });
    if (!found) return undefined;
    const pair = {
      certPem: decode(found.data?.[CERT]),
      keyPem: decode(found.data?.[KEY]),
      caPem: decode(found.data?.[CA]),
    };
    if (!pair.certPem || !pair.keyPem || !pair.caPem) {
      throw new Error(
        `Secret ${namespace}/${secret} lacks ${CERT}, ${KEY} or ${CA}: delete it and the operator makes a new one`,
      );
    }
    return pair;
  };
  const existing = await read();
  if (existing) return existing;
  const ca = createCertificateAuthority('gpucloud-tenant-api-ca', VALID_DAYS);
  const dns = `${service}.${namespace}.svc`;
  const issued = issueCertificate(ca, {
    commonName: dns,
    dnsNames: [dns, `${dns}.cluster.local`],
    usage: 'server',
    days: VALID_DAYS,
  });
  const pair = { certPem: issued.certPem, keyPem: issued.keyPem, caPem: ca.certPem };
  try {
    await kube.request(z.unknown(), {
      method: 'POST',
      path: `/api/v1/namespaces/${namespace}/secrets`,
      body: {
        apiVersion: 'v1',
        kind: 'Secret',
        type: 'kubernetes.io/tls',
        metadata: { name: secret, labels: { 'app.kubernetes.io/managed-by': 'gpucloud-operator' } },
        stringData: { [CERT]: pair.certPem, [KEY]: pair.keyPem, [CA]: pair.caPem },
      },
    });
    return pair;
  } catch (error) {
    if (!isStatus(error, 409)) throw error;
    const winner = await read();
    if (!winner) throw error;
    return winner;
  }
}

const apiServiceSchema = z.looseObject({
  spec: z.looseObject({ caBundle: z.string().optional() }),
});

/**
 * Writes `caPem` into the APIService's caBundle, when it differs: the aggregator then trusts the pair.
 * False while there is no APIService yet (it may be created after the operator starts): asked again later.
 */
export async function trustInApiService(kube: KubeClient, caPem: string): Promise<boolean> {
  const path = `/apis/apiregistration.k8s.io/v1/apiservices/${API_SERVICE_NAME}`;
  const caBundle = Buffer.from(caPem).toString('base64');
  const current = await kube.request(apiServiceSchema, { method: 'GET', path }).catch((error: unknown) => {
    if (isStatus(error, 404)) return undefined;
    throw error;
  });
  if (current === undefined) return false;
  if (current.spec.caBundle === caBundle) return true;
  await kube.request(z.unknown(), { method: 'PATCH', path, body: { spec: { caBundle } } });
  return true;
}
