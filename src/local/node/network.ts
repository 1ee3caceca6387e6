// The node's network: a namespace of its own (made by `unshare --net` when containerd starts, so it goes
// when the node's last process does), joined to the host by a veth pair whose two addresses are the only
// ones the node has. The host side carries the route to the node's pods; the node side has no default
// route, so nothing the node or its pods send can leave for anywhere but the host's end of the pair.
//
//   host  gpcnode<n> 10.244.<n>.1/30  <->  eth0 10.244.<n>.2/30  node (kubelet, containerd, cni0 10.88.<n>.1/24)
//
// The node's loopback also carries the `kubernetes` Service's address, where ../node.ts relays to the
// apiserver: the kubelet and the pods reach the apiserver at the address they expect.
import { z } from 'zod';
import { KUBERNETES_SERVICE_IP } from '../controlplane/flags.ts';
import { NodeCommandError, run, runInNetns } from './run.ts';

/** Instances on one machine: each takes the first free index, and with it its addresses. */
const MAX_INSTANCES = 64;

export interface NodeNetwork {
  index: number;
  /** The host's end of the pair. */
  hostLink: string;
  hostAddress: string;
  /** The node's InternalIP: the kubelet listens here, the apiserver connects here. */
  nodeAddress: string;
  /** The pods' subnet, on the node's bridge; the host routes it to the node. */
  podSubnet: string;
}

export function networkFor(index: number): NodeNetwork {
  return {
    index,
    hostLink: `gpcnode${index}`,
    hostAddress: `10.244.${index}.1`,
    nodeAddress: `10.244.${index}.2`,
    podSubnet: `10.88.${index}.0/24`,
  };
}

const Routes = z.array(z.object({ dst: z.string() }));
const Addresses = z.array(
  z.object({ addr_info: z.array(z.object({ local: z.string(), prefixlen: z.number() })).default([]) }),
);

/**
 * Gives the network namespace of process `pid` the first free instance's addresses. "Free" means no host
 * route or address overlaps them and the host link's name is not taken (creating it is the atomic claim).
 */
export async function attachNetwork(pid: number): Promise<NodeNetwork> {
  const taken = await hostPrefixes();
  for (let index = 0; index < MAX_INSTANCES; index++) {
    const network = networkFor(index);
    const ours = [`${network.hostAddress}/30`, network.podSubnet];
    if (ours.some((prefix) => taken.some((other) => overlaps(prefix, other)))) continue;
    try {
      await run('ip', [
        'link',
        'add',
        network.hostLink,
        'type',
        'veth',
        'peer',
        'name',
        'eth0',
        'netns',
        String(pid),
      ]);
    } catch (error) {
      if (error instanceof NodeCommandError && /exists/i.test(error.stderr)) continue;
      throw error;
    }
    try {
      await configure(pid, network);
    } catch (error) {
      await detachNetwork(network);
      throw error;
    }
    return network;
  }
  throw new Error(`no free local node network: all ${MAX_INSTANCES} instances' addresses are in use`);
}

async function configure(pid: number, network: NodeNetwork): Promise<void> {
  await run('ip', ['addr', 'add', `${network.hostAddress}/30`, 'dev', network.hostLink]);
  await run('ip', ['link', 'set', network.hostLink, 'up']);
  await runInNetns(pid, 'ip', ['link', 'set', 'lo', 'up']);
  await runInNetns(pid, 'ip', ['addr', 'add', `${KUBERNETES_SERVICE_IP}/32`, 'dev', 'lo']);
  await runInNetns(pid, 'ip', ['addr', 'add', `${network.nodeAddress}/30`, 'dev', 'eth0']);
  await runInNetns(pid, 'ip', ['link', 'set', 'eth0', 'up']);
  await run('ip', ['route', 'add', network.podSubnet, 'via', network.nodeAddress, 'dev', network.hostLink]);
}

/** Deletes the host's end (and with it the node's end and the route). Idempotent. */
export async function detachNetwork(network: NodeNetwork): Promise<void> {
  try {
    await run('ip', ['link', 'del', network.hostLink]);
  } catch (error) {
    // Already gone with the namespace: the node's last process has exited.
    if (!(error instanceof NodeCommandError && /cannot find device/i.test(error.stderr))) throw error;
  }
}

/** Whether instance `index`'s host link exists: whether a node of that index is alive. */
export async function networkExists(index: number): Promise<boolean> {
  const links = z
    .array(z.object({ ifname: z.string() }))
    .parse(JSON.parse(await run('ip', ['-j', 'link', 'show'])));
  return links.some((link) => link.ifname === networkFor(index).hostLink);
}

/** Every IPv4 prefix the host routes or holds, the default route aside. */
async function hostPrefixes(): Promise<string[]> {
  const routes = Routes.parse(JSON.parse(await run('ip', ['-j', '-4', 'route', 'show', 'table', 'all'])));
  const addresses = Addresses.parse(JSON.parse(await run('ip', ['-j', '-4', 'addr', 'show'])));
  return [
    ...routes.map((route) => route.dst).filter((dst) => dst !== 'default' && /^\d/.test(dst)),
    ...addresses.flatMap((link) => link.addr_info.map((info) => `${info.local}/${info.prefixlen}`)),
  ];
}

/** Whether two IPv4 prefixes (`a.b.c.d/len`, or a bare address) share an address. */
export function overlaps(a: string, b: string): boolean {
  const [baseA, lengthA] = parsePrefix(a);
  const [baseB, lengthB] = parsePrefix(b);
  const length = Math.min(lengthA, lengthB);
  const mask = length === 0 ? 0 : (0xffffffff << (32 - length)) >>> 0;
  return (baseA & mask) >>> 0 === (baseB & mask) >>> 0;
}

function parsePrefix(prefix: string): [number, number] {
  const [address = '', length = '32'] = prefix.split('/');
  const value = address.split('.').reduce((sum, octet) => sum * 256 + Number(octet), 0);
  return [value >>> 0, Number(length)];
}
