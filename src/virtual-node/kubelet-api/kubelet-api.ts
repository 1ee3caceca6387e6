// The kubelet API as the operator runs it: the serving pair and the client CA read from files (a mounted
// Secret), reviews through the apiserver with the tenant API's decision cache, and the Pods of the nodes
// this process maintains (none while it is a standby: the leader serves).
import { readFile } from 'node:fs/promises';
import type { KubeClient } from '../../kube/client.ts';
import type { Logger } from '../../lib/logger.ts';
import { DECISION_TTL_MS, SubjectAccessReviewer } from '../../serving/authorizer.ts';
import type { AccountEntries } from '../node-controller.ts';
import { KubeletApiServer, type NodePods } from './server.ts';

export interface KubeletApiOptions {
  readonly port: number;
  readonly files: { readonly certFile: string; readonly keyFile: string; readonly clientCaFile: string };
  readonly kube: KubeClient;
  readonly pods: NodePods;
  readonly accounts: AccountEntries;
  readonly log: Logger;
  readonly followPollMs?: number;
}

export async function startKubeletApi(options: KubeletApiOptions): Promise<KubeletApiServer> {
  const { files } = options;
  const server = new KubeletApiServer({
    port: options.port,
    tls: {
      certPem: await readFile(files.certFile, 'utf8'),
      keyPem: await readFile(files.keyFile, 'utf8'),
      clientCaPem: await readFile(files.clientCaFile, 'utf8'),
    },
    authorizer: new SubjectAccessReviewer(options.kube, {
      allowedTtlMs: DECISION_TTL_MS.allowed,
      deniedTtlMs: DECISION_TTL_MS.denied,
    }),
    pods: options.pods,
    accounts: options.accounts,
    followPollMs: options.followPollMs ?? 2_000,
    log: options.log,
  });
  await server.start();
  options.log.info({ port: server.port }, 'virtual nodes: kubelet API serving');
  return server;
}
