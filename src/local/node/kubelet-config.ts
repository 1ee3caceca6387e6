import type { NodeCertificates } from './certificates.ts';
import type { NodeLayout } from './layout.ts';

export const KUBELET_HEALTHZ_PORT = 10248;

export interface KubeletSettings {
  layout: NodeLayout;
  certificates: NodeCertificates;
  nodeAddress: string;
  cgroupRoot: string;
}

/**
 * The KubeletConfiguration (JSON, which the kubelet reads as YAML). What this machine needs: cgroupfs (no
 * systemd), `failSwapOn: false`, `failCgroupV1: false` (cgroup v1 here). What a real cluster has:
 * anonymous access off, clients authenticated by the cluster CA or a token and authorized by the apiserver
 * (webhook), so `kubectl logs` works for whom the apiserver allows and for nobody else. The rest keeps
 * the node to itself: every address its own, every path in its data directory, no DNS server (none runs
 * here), and eviction thresholds low enough that a busy, nearly full machine does not taint it.
 */
export function kubeletConfig(settings: KubeletSettings): string {
  const { layout, certificates } = settings;
  return `${JSON.stringify(
    {
      apiVersion: 'kubelet.config.k8s.io/v1beta1',
      kind: 'KubeletConfiguration',
      address: settings.nodeAddress,
      port: 10250,
      readOnlyPort: 0,
      healthzBindAddress: settings.nodeAddress,
      healthzPort: KUBELET_HEALTHZ_PORT,
      tlsCertFile: certificates.servingCert,
      tlsPrivateKeyFile: certificates.servingKey,
      authentication: {
        anonymous: { enabled: false },
        webhook: { enabled: true },
        x509: { clientCAFile: certificates.clientCaFile },
      },
      authorization: { mode: 'Webhook' },
      cgroupDriver: 'cgroupfs',
      cgroupRoot: settings.cgroupRoot,
      failSwapOn: false,
      failCgroupV1: false,
      containerRuntimeEndpoint: `unix://${layout.containerdSocket}`,
      podLogsDir: layout.podLogsDir,
      resolvConf: layout.resolvConf,
      clusterDomain: 'cluster.local',
      maxPods: 32,
      serializeImagePulls: false,
      evictionHard: {
        'memory.available': '50Mi',
        'nodefs.available': '1%',
        'nodefs.inodesFree': '1%',
        'imagefs.available': '1%',
      },
      imageGCHighThresholdPercent: 100,
      imageGCLowThresholdPercent: 99,
    },
    null,
    2,
  )}\n`;
}

/** The kubelet's kubeconfig: the apiserver at the `kubernetes` Service's address, as the node. */
export function kubeletKubeconfig(
  server: string,
  servingCaPem: string,
  certificates: NodeCertificates,
): string {
  return `${JSON.stringify(
    {
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        {
          name: 'local',
          cluster: { server, 'certificate-authority-data': Buffer.from(servingCaPem).toString('base64') },
        },
      ],
      users: [
        {
          name: 'kubelet',
          user: { 'client-certificate': certificates.clientCert, 'client-key': certificates.clientKey },
        },
      ],
      contexts: [{ name: 'kubelet', context: { cluster: 'local', user: 'kubelet' } }],
      'current-context': 'kubelet',
    },
    null,
    2,
  )}\n`;
}
