// What the tests of the virtual nodes' kubelet API share: free ports to serve on, the serving pair the
// apiserver trusts, the apiserver's own client certificate for kubelets, and a request straight to a port.
import { spawn } from 'node:child_process';
import { readFile, readlink } from 'node:fs/promises';
import { request as httpsRequest } from 'node:https';
import { createServer } from 'node:net';
import type { ControlPlane } from '../../src/local/controlplane.ts';
import { attachNetwork, detachNetwork } from '../../src/local/node/network.ts';
import { type VirtualNodeTls, virtualNodeTls } from '../../src/local/virtual-node-serving.ts';
import { poll } from './until.ts';

export interface OwnedAddress {
  /** An address of this machine that the test made, and that goes with `release`. */
  readonly address: string;
  release(): Promise<void>;
}

/**
 * An address for the nodes' InternalIP that is not loopback, which the apiserver's node proxy
 * (`/api/v1/nodes/<node>/proxy/...`) refuses to reach, nor this machine's own: the host's end of a veth pair
 * into a network namespace made for the test (the real node's network, ../../src/local/node/network.ts),
 * held by a process that sleeps in it. Released, the process goes, and the pair and its route with it.
 */
export async function ownedAddress(): Promise<OwnedAddress> {
  const holder = spawn('unshare', ['--net', 'sleep', 'infinity'], { stdio: 'ignore' });
  const exited = new Promise((resolve) => holder.once('exit', resolve));
  if (holder.pid === undefined) throw new Error('unshare could not start');
  const pid = holder.pid;
  try {
    // unshare makes the namespace and then becomes sleep: attached once the namespace is no longer ours.
    await poll(
      async () => (await readlink(`/proc/${pid}/ns/net`)) !== (await readlink('/proc/self/ns/net')),
      (moved) => moved,
      'the holder in its own network namespace',
    );
    const network = await attachNetwork(pid);
    return {
      address: network.hostAddress,
      release: async () => {
        holder.kill();
        await exited;
        await detachNetwork(network);
      },
    };
  } catch (error) {
    holder.kill();
    throw error;
  }
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

/** The serving pair's flags and CA (as the local stack makes them), and the apiserver's own identity. */
export interface KubeletApiFiles extends VirtualNodeTls {
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
  const { layout } = plane;
  return {
    ...(await virtualNodeTls(plane, addresses)),
    apiserverClient: {
      certPem: await readFile(layout.kubeletClientCert, 'utf8'),
      keyPem: await readFile(layout.kubeletClientKey, 'utf8'),
    },
  };
}

/** GET `path` straight on a kubelet API at `host`:`port`, with a client certificate, a bearer token, or neither. */
export function kubeletGet(
  host: string,
  port: number,
  path: string,
  caPem: string,
  identity?: ClientIdentity | { readonly token: string },
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const request = httpsRequest(
      {
        host,
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
