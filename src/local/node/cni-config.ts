import type { NodeNetwork } from './network.ts';

export const CNI_NETWORK_NAME = 'gpucloud-node';

/**
 * The pods' network: a bridge in the node's namespace, the gateway on it, addresses from the node's subnet
 * (host-local, its state in the node's data directory). No masquerade and no port mapping: a pod reaches
 * the node and the host's end of its link, and nothing else.
 */
export function cniConfig(network: NodeNetwork, ipamDataDir: string): string {
  return `${JSON.stringify(
    {
      cniVersion: '1.0.0',
      name: CNI_NETWORK_NAME,
      plugins: [
        {
          type: 'bridge',
          bridge: 'cni0',
          isGateway: true,
          ipMasq: false,
          hairpinMode: true,
          ipam: {
            type: 'host-local',
            ranges: [[{ subnet: network.podSubnet }]],
            routes: [{ dst: '0.0.0.0/0' }],
            dataDir: ipamDataDir,
          },
        },
      ],
    },
    null,
    2,
  )}\n`;
}
