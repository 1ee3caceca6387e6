// What the tests of the virtual nodes' kubelet API share: free ports to serve on, the serving pair the
// apiserver trusts, the apiserver's own client certificate for kubelets, and a request straight to a port.
import { readFile, writeFile } from 'node:fs/promises';
import { request as httpsRequest } from 'node:https';
import { createServer } from 'node:net';
import { networkInterfaces } from 'node:os';
import { join } from 'node:path';
import { issueCertificate } from '../../src/lib/x509.ts';
import type { ControlPlane } from '../../src/local/controlplane.ts';

/**
 * The address the nodes name as their InternalIP: this machine's own, not loopback, which the apiserver's
 * node proxy (`/api/v1/nodes/<node>/proxy/...`) refuses to reach.
 */
export function nodeAddress(): string {
  return (
    Object.values(networkInterfaces())
      .flat()
      .find((each) => each?.family === 'IPv4' && !each.internal)?.address ?? '127.0.0.1'
  );
}

/** Whether `candidate` can be listened on now. */
async function isFree(candidate: number): Promise<boolean> {
  const server = createServer();
  const listening = await new Promise<boolean>((resolve) => {
    server.once('error', () => resolve(false));
    server.listen(candidate, () => resolve(true));
  });
  if (listening) await new Promise((resolve) => server.close(resolve));
  return listening;
}

/** The first of `count` ports in a row that are free now. */
export async function freePorts(count: number): Promise<number> {
  for (;;) {
    const first = 20_000 + Math.floor(Math.random() * 40_000);
    let all = true;
    for (let i = 0; i < count && all; i++) all = await isFree(first + i);
    if (all) return first;
  }
}

export interface ClientIdentity {
  readonly certPem: string;
  readonly keyPem: string;
}

export interface KubeletApiFiles {
  /** The operator's flags naming the serving pair and the client CA. */
  readonly flags: readonly string[];
  /** The CA the serving pair is checked against: the cluster CA. */
  readonly caPem: string;
  /** The apiserver's --kubelet-client-certificate: who calls a kubelet for kubectl. */
  readonly apiserverClient: ClientIdentity;
}

/**
 * The serving pair the apiserver trusts (--kubelet-certificate-authority is the cluster CA) for the nodes'
 * `addresses`, as a real cluster's operator gets it in a Secret, written in the plane's data directory; the
 * client CA is the cluster CA, which signs the apiserver's --kubelet-client-certificate.
 */
export async function kubeletApiFiles(
  plane: ControlPlane,
  addresses: readonly string[],
): Promise<KubeletApiFiles> {
  const { layout, dataDir } = plane;
  const ca = {
    certPem: await readFile(layout.clusterCa, 'utf8'),
    keyPem: await readFile(layout.clusterCaKey, 'utf8'),
  };
  const serving = issueCertificate(ca, {
    commonName: 'gpucloud-virtual-nodes',
    ipAddresses: [...addresses],
    usage: 'server',
    days: 1,
  });
  await writeFile(join(dataDir, 'vnode.crt'), serving.certPem, { mode: 0o600 });
  await writeFile(join(dataDir, 'vnode.key'), serving.keyPem, { mode: 0o600 });
  return {
    flags: [
      '--virtual-node-tls-cert-file',
      join(dataDir, 'vnode.crt'),
      '--virtual-node-tls-key-file',
      join(dataDir, 'vnode.key'),
      '--virtual-node-client-ca-file',
      layout.clusterCa,
    ],
    caPem: ca.certPem,
    apiserverClient: {
      certPem: await readFile(layout.kubeletClientCert, 'utf8'),
      keyPem: await readFile(layout.kubeletClientKey, 'utf8'),
    },
  };
}

/** GET `path` straight on a kubelet API `port` of this machine, with a client certificate, a bearer token, or neither. */
export function kubeletGet(
  port: number,
  path: string,
  caPem: string,
  identity?: ClientIdentity | { readonly token: string },
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const request = httpsRequest(
      {
        host: '127.0.0.1',
        port,
        path,
        ca: caPem,
        ...(identity && 'certPem' in identity ? { cert: identity.certPem, key: identity.keyPem } : {}),
        ...(identity && 'token' in identity
          ? { headers: { authorization: `Bearer ${identity.token}` } }
          : {}),
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () =>
          resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString() }),
        );
      },
    );
    request.on('error', reject);
    request.end();
  });
}
