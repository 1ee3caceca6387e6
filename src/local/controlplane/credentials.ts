// The secrets a control plane needs, created on first start and reused from a persistent data directory so
// that kubeconfigs and issued service-account tokens stay valid across restarts.
import { generateKeyPair, randomBytes } from 'node:crypto';
import { access, mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { promisify } from 'node:util';
import { createCertificateAuthority, issueCertificate } from '../../lib/x509.ts';
import type { ControlPlaneLayout } from './layout.ts';

export const ADMIN_USER = 'admin';
/** The common name of the apiserver's front-proxy client certificate: `--requestheader-allowed-names`. */
export const FRONT_PROXY_CLIENT = 'front-proxy-client';
/** The apiserver's identity towards kubelets, as kubeadm names it; its group may do anything there. */
const KUBELET_CLIENT = 'kube-apiserver-kubelet-client';

const generateKeyPairAsync = promisify(generateKeyPair);

export interface Credentials {
  /** Bearer token of the `admin` user, a member of `system:masters`. */
  adminToken: string;
}

export async function ensureCredentials(layout: ControlPlaneLayout): Promise<Credentials> {
  await mkdir(dirname(layout.tokenFile), { recursive: true, mode: 0o700 });
  await ensureServiceAccountKeys(layout);
  await ensureFrontProxy(layout);
  await ensureClusterCa(layout);
  return { adminToken: await ensureAdminToken(layout.tokenFile) };
}

async function ensureServiceAccountKeys(layout: ControlPlaneLayout): Promise<void> {
  if (await exists(layout.serviceAccountKey)) return;
  const { privateKey, publicKey } = await generateKeyPairAsync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  await writeFile(layout.serviceAccountPublicKey, publicKey, { mode: 0o600 });
  await writeFile(layout.serviceAccountKey, privateKey, { mode: 0o600 });
}

/**
 * The aggregation layer's pair, as kubeadm makes it: a CA of its own, and the client certificate the
 * apiserver presents when it proxies a request to an extension server (the tenant API).
 */
async function ensureFrontProxy(layout: ControlPlaneLayout): Promise<void> {
  if (await exists(layout.frontProxyKey)) return;
  const ca = createCertificateAuthority('front-proxy-ca', 3650);
  const client = issueCertificate(ca, { commonName: FRONT_PROXY_CLIENT, usage: 'client', days: 3650 });
  await writeFile(layout.frontProxyCa, ca.certPem, { mode: 0o600 });
  await writeFile(layout.frontProxyCert, client.certPem, { mode: 0o600 });
  await writeFile(layout.frontProxyKey, client.keyPem, { mode: 0o600 });
}

/** The cluster CA and the apiserver's client certificate for kubelets, signed by it. */
async function ensureClusterCa(layout: ControlPlaneLayout): Promise<void> {
  if (await exists(layout.kubeletClientKey)) return;
  const ca = createCertificateAuthority('gpucloud-local-ca', 3650);
  const client = issueCertificate(ca, {
    commonName: KUBELET_CLIENT,
    organization: ['system:masters'],
    usage: 'client',
    days: 3650,
  });
  await writeFile(layout.clusterCa, ca.certPem, { mode: 0o600 });
  await writeFile(layout.clusterCaKey, ca.keyPem, { mode: 0o600 });
  await writeFile(layout.kubeletClientCert, client.certPem, { mode: 0o600 });
  await writeFile(layout.kubeletClientKey, client.keyPem, { mode: 0o600 });
}

/** The static token file: `token,user,uid,"groups"`, one line, the admin's. */
async function ensureAdminToken(tokenFile: string): Promise<string> {
  if (await exists(tokenFile)) {
    const token = (await readFile(tokenFile, 'utf8')).split(',')[0];
    if (token) return token;
  }
  const token = randomBytes(32).toString('hex');
  await writeFile(tokenFile, `${token},${ADMIN_USER},${ADMIN_USER},"system:masters"\n`, { mode: 0o600 });
  return token;
}

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}
