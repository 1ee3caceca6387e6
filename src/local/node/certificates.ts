// The kubelet's two certificates, from the control plane's cluster CA: a client certificate naming it as
// the node (`system:node:<name>` in `system:nodes`, what the Node authorizer and NodeRestriction expect),
// and a serving certificate for its address, which the apiserver verifies before it sends logs requests.
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { issueCertificate } from '../../lib/x509.ts';
import type { ControlPlaneLayout } from '../controlplane/layout.ts';

const DAYS = 365;

export interface NodeCertificates {
  clientCert: string;
  clientKey: string;
  servingCert: string;
  servingKey: string;
  /** The CA that signs the apiserver's client certificate: the kubelet trusts clients it signed. */
  clientCaFile: string;
}

export async function issueNodeCertificates(
  plane: ControlPlaneLayout,
  pki: string,
  nodeName: string,
  nodeAddress: string,
): Promise<NodeCertificates> {
  const ca = {
    certPem: await readFile(plane.clusterCa, 'utf8'),
    keyPem: await readFile(plane.clusterCaKey, 'utf8'),
  };
  const commonName = `system:node:${nodeName}`;
  const client = issueCertificate(ca, {
    commonName,
    organization: ['system:nodes'],
    usage: 'client',
    days: DAYS,
  });
  const serving = issueCertificate(ca, {
    commonName,
    dnsNames: [nodeName],
    ipAddresses: [nodeAddress],
    usage: 'server',
    days: DAYS,
  });
  const files: NodeCertificates = {
    clientCert: join(pki, 'kubelet-client.crt'),
    clientKey: join(pki, 'kubelet-client.key'),
    servingCert: join(pki, 'kubelet.crt'),
    servingKey: join(pki, 'kubelet.key'),
    clientCaFile: plane.clusterCa,
  };
  await writeFile(files.clientCert, client.certPem, { mode: 0o600 });
  await writeFile(files.clientKey, client.keyPem, { mode: 0o600 });
  await writeFile(files.servingCert, serving.certPem, { mode: 0o600 });
  await writeFile(files.servingKey, serving.keyPem, { mode: 0o600 });
  return files;
}
