import { writeFile } from 'node:fs/promises';
import { KubeConfig } from '@kubernetes/client-node';

export const CLUSTER_NAME = 'gpucloud-local';

export interface KubeconfigSpec {
  server: string;
  caPem: string;
  /** User and context name. */
  name: string;
  token: string;
}

/** Writes a kubeconfig (as JSON, which kubectl reads as YAML) readable by the owner only. */
export async function writeKubeconfig(path: string, spec: KubeconfigSpec): Promise<KubeConfig> {
  const config = new KubeConfig();
  config.loadFromOptions({
    clusters: [
      {
        name: CLUSTER_NAME,
        server: spec.server,
        caData: Buffer.from(spec.caPem).toString('base64'),
        skipTLSVerify: false,
      },
    ],
    users: [{ name: spec.name, token: spec.token }],
    contexts: [{ name: spec.name, cluster: CLUSTER_NAME, user: spec.name }],
    currentContext: spec.name,
  });
  await writeFile(path, config.exportConfig(), { mode: 0o600 });
  return config;
}
