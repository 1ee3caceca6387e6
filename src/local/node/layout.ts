import { join } from 'node:path';

/** Where everything of one node lives inside its data directory. */
export interface NodeLayout {
  dataDir: string;
  containerdConfig: string;
  containerdRoot: string;
  containerdState: string;
  containerdSocket: string;
  cniConfDir: string;
  cniIpamDir: string;
  kubeletConfig: string;
  kubeletKubeconfig: string;
  kubeletRoot: string;
  podLogsDir: string;
  resolvConf: string;
  pki: string;
  containerdLog: string;
  kubeletLog: string;
  forwardLog: string;
}

export function nodeLayout(dataDir: string): NodeLayout {
  return {
    dataDir,
    containerdConfig: join(dataDir, 'containerd.toml'),
    containerdRoot: join(dataDir, 'containerd', 'root'),
    containerdState: join(dataDir, 'containerd', 'state'),
    containerdSocket: join(dataDir, 'containerd.sock'),
    cniConfDir: join(dataDir, 'cni', 'net.d'),
    cniIpamDir: join(dataDir, 'cni', 'ipam'),
    kubeletConfig: join(dataDir, 'kubelet.json'),
    kubeletKubeconfig: join(dataDir, 'kubelet.kubeconfig'),
    kubeletRoot: join(dataDir, 'kubelet'),
    podLogsDir: join(dataDir, 'pod-logs'),
    resolvConf: join(dataDir, 'resolv.conf'),
    pki: join(dataDir, 'pki'),
    containerdLog: join(dataDir, 'containerd.log'),
    kubeletLog: join(dataDir, 'kubelet.log'),
    forwardLog: join(dataDir, 'forward.log'),
  };
}
