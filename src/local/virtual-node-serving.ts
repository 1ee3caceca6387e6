// The virtual nodes' kubelet API on the local control plane (the local stack, and the tests), so that
// `kubectl logs` of a Pod on a virtual node works here as in a cluster: a serving pair for the nodes'
// InternalIP signed by the cluster CA, which the apiserver checks kubelets against
// (--kubelet-certificate-authority); the client CA is the cluster CA too, as it signs the apiserver's
// --kubelet-client-certificate.
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { issueCertificate } from '../lib/x509.ts';
import type { ControlPlane } from './controlplane.ts';

export interface VirtualNodeTls {
  /** The operator's flags naming the pair and the client CA. */
  readonly flags: string[];
  /** The CA the pair is signed by, and the apiserver checks kubelets against: the cluster CA. */
  readonly caPem: string;
}

/** A serving pair for the nodes' `addresses`, made under the plane's data, and the flags that serve with it. */
export async function virtualNodeTls(
  plane: ControlPlane,
  addresses: readonly string[],
): Promise<VirtualNodeTls> {
  const { layout } = plane;
  const ca = {
    certPem: await readFile(layout.clusterCa, 'utf8'),
    keyPem: await readFile(layout.clusterCaKey, 'utf8'),
  };
  const pair = issueCertificate(ca, {
    commonName: 'gpucloud-virtual-nodes',
    ipAddresses: [...addresses],
    usage: 'server',
    days: 365,
  });
  const dir = join(plane.dataDir, 'virtual-nodes');
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const certFile = join(dir, 'kubelet-api.crt');
  const keyFile = join(dir, 'kubelet-api.key');
  await writeFile(certFile, pair.certPem, { mode: 0o600 });
  await writeFile(keyFile, pair.keyPem, { mode: 0o600 });
  return {
    flags: [
      '--virtual-node-tls-cert-file',
      certFile,
      '--virtual-node-tls-key-file',
      keyFile,
      '--virtual-node-client-ca-file',
      layout.clusterCa,
    ],
    caPem: ca.certPem,
  };
}
