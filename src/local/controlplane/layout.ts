import { join } from 'node:path';

/** Where everything of one control plane lives inside its data directory. */
export interface ControlPlaneLayout {
  dataDir: string;
  etcdDataDir: string;
  /** kube-apiserver writes its self-signed serving certificate and CA here. */
  certDir: string;
  serviceAccountKey: string;
  serviceAccountPublicKey: string;
  tokenFile: string;
  /** The front proxy: the CA extension servers trust for proxied requests, and the apiserver's client pair. */
  frontProxyCa: string;
  frontProxyCert: string;
  frontProxyKey: string;
  /**
   * The cluster CA: the apiserver trusts client certificates it signed (the kubelet's), the kubelet trusts
   * the apiserver's client certificate it signed, and the apiserver checks the kubelet's serving certificate
   * against it.
   */
  clusterCa: string;
  clusterCaKey: string;
  /** What the apiserver presents to a kubelet (logs, exec). */
  kubeletClientCert: string;
  kubeletClientKey: string;
  etcdLog: string;
  apiserverLog: string;
  /** kube-controller-manager writes its self-signed serving certificate here (it serves /healthz only). */
  controllerManagerCertDir: string;
  controllerManagerLog: string;
  adminKubeconfig: string;
  kubeconfigsDir: string;
}

export function controlPlaneLayout(dataDir: string): ControlPlaneLayout {
  const pki = join(dataDir, 'pki');
  return {
    dataDir,
    etcdDataDir: join(dataDir, 'etcd'),
    certDir: join(pki, 'serving'),
    serviceAccountKey: join(pki, 'service-account.key'),
    serviceAccountPublicKey: join(pki, 'service-account.pub'),
    tokenFile: join(pki, 'tokens.csv'),
    frontProxyCa: join(pki, 'front-proxy-ca.crt'),
    frontProxyCert: join(pki, 'front-proxy-client.crt'),
    frontProxyKey: join(pki, 'front-proxy-client.key'),
    clusterCa: join(pki, 'ca.crt'),
    clusterCaKey: join(pki, 'ca.key'),
    kubeletClientCert: join(pki, 'apiserver-kubelet-client.crt'),
    kubeletClientKey: join(pki, 'apiserver-kubelet-client.key'),
    etcdLog: join(dataDir, 'etcd.log'),
    apiserverLog: join(dataDir, 'apiserver.log'),
    controllerManagerCertDir: join(pki, 'controller-manager'),
    controllerManagerLog: join(dataDir, 'controller-manager.log'),
    adminKubeconfig: join(dataDir, 'admin.kubeconfig'),
    kubeconfigsDir: join(dataDir, 'kubeconfigs'),
  };
}
