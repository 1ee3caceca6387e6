import { FRONT_PROXY_CLIENT } from './credentials.ts';
import type { ControlPlaneLayout } from './layout.ts';

const LOOPBACK = '127.0.0.1';
const MEMBER_NAME = 'controlplane';
export const SERVICE_ACCOUNT_ISSUER = 'https://kubernetes.default.svc.cluster.local';
const SERVICE_CLUSTER_IP_RANGE = '10.96.0.0/16';
/** The `kubernetes` Service's ClusterIP (the range's first address), in the apiserver's serving certificate. */
export const KUBERNETES_SERVICE_IP = '10.96.0.1';

export interface EtcdPorts {
  client: number;
  peer: number;
}

export function etcdClientUrl(ports: EtcdPorts): string {
  return `http://${LOOPBACK}:${ports.client}`;
}

/**
 * A single-member etcd on loopback. `durable: false` skips fsync: a throwaway plane needs no crash safety,
 * and fsync dominates write latency on a busy machine.
 */
export function etcdArgs(layout: ControlPlaneLayout, ports: EtcdPorts, durable: boolean): string[] {
  const clientUrl = etcdClientUrl(ports);
  const peerUrl = `http://${LOOPBACK}:${ports.peer}`;
  return [
    `--name=${MEMBER_NAME}`,
    `--data-dir=${layout.etcdDataDir}`,
    `--listen-client-urls=${clientUrl}`,
    `--advertise-client-urls=${clientUrl}`,
    `--listen-peer-urls=${peerUrl}`,
    `--initial-advertise-peer-urls=${peerUrl}`,
    `--initial-cluster=${MEMBER_NAME}=${peerUrl}`,
    ...(durable ? [] : ['--unsafe-no-fsync']),
  ];
}

export function apiserverUrl(port: number): string {
  return `https://${LOOPBACK}:${port}`;
}

/**
 * What an operator needs: RBAC, static-token users, TokenRequest for service accounts. Lease, events, CRDs
 * with CEL validation and watch bookmarks are on by default. With no --tls-cert-file the apiserver
 * self-signs a certificate for 127.0.0.1 into --cert-dir and keeps it across restarts.
 *
 * The aggregation layer is on, as kubeadm sets it up: the apiserver proxies an APIService's requests with
 * the front-proxy client certificate and the user in `X-Remote-*` headers, and publishes the CA and names
 * in kube-system/extension-apiserver-authentication. Routing stays on the Service (no
 * --enable-aggregator-routing): an Endpoints or EndpointSlice may not name a loopback address, but an
 * `ExternalName` Service of `localhost` may, and the apiserver resolves it when it routes to Services.
 *
 * Kubelets (the local node's, see ../node.ts) authenticate with client certificates of the cluster CA and
 * are authorized as nodes; the apiserver reaches them with its own client certificate of that CA and
 * verifies theirs against it.
 */
export function apiserverArgs(
  layout: ControlPlaneLayout,
  etcd: EtcdPorts,
  port: number,
  extraFlags: readonly string[],
): string[] {
  return [
    `--etcd-servers=${etcdClientUrl(etcd)}`,
    `--bind-address=${LOOPBACK}`,
    `--advertise-address=${LOOPBACK}`,
    `--secure-port=${port}`,
    `--cert-dir=${layout.certDir}`,
    `--token-auth-file=${layout.tokenFile}`,
    // Node before RBAC, as kubeadm sets it: a kubelet may read and write what its own pods need only.
    '--authorization-mode=Node,RBAC',
    '--enable-admission-plugins=NodeRestriction',
    `--service-account-issuer=${SERVICE_ACCOUNT_ISSUER}`,
    `--service-account-key-file=${layout.serviceAccountPublicKey}`,
    `--service-account-signing-key-file=${layout.serviceAccountKey}`,
    `--service-cluster-ip-range=${SERVICE_CLUSTER_IP_RANGE}`,
    '--profiling=false',
    `--requestheader-client-ca-file=${layout.frontProxyCa}`,
    `--requestheader-allowed-names=${FRONT_PROXY_CLIENT}`,
    '--requestheader-username-headers=X-Remote-User',
    '--requestheader-group-headers=X-Remote-Group',
    '--requestheader-extra-headers-prefix=X-Remote-Extra-',
    `--proxy-client-cert-file=${layout.frontProxyCert}`,
    `--proxy-client-key-file=${layout.frontProxyKey}`,
    `--client-ca-file=${layout.clusterCa}`,
    `--kubelet-client-certificate=${layout.kubeletClientCert}`,
    `--kubelet-client-key=${layout.kubeletClientKey}`,
    `--kubelet-certificate-authority=${layout.clusterCa}`,
    // The local node's InternalIP is the one address of it the apiserver can reach; its name resolves nowhere.
    '--kubelet-preferred-address-types=InternalIP',
    ...extraFlags,
  ];
}
