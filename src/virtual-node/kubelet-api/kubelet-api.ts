// The kubelet API as the operator runs it: the serving pair and the client CA read from files (a mounted
// Secret), bearer tokens and access reviewed through the apiserver (the tenant API's decision cache). Each virtual node is served
// on a port of its own by the leader (endpoints.ts).
import { readFile } from 'node:fs/promises';
import type { KubeClient } from '../../kube/client.ts';
import type { Logger } from '../../lib/logger.ts';
import { type Authorizer, DECISION_TTL_MS, SubjectAccessReviewer } from '../../serving/authorizer.ts';
import { type TokenAuthenticator, TokenReviewer } from './bearer-token.ts';
import type { ServingTls } from './server.ts';

export interface KubeletApiFiles {
  readonly certFile: string;
  readonly keyFile: string;
  readonly clientCaFile: string;
}

/** What every node's server shares. */
export interface KubeletApiSettings {
  readonly tls: ServingTls;
  readonly authorizer: Authorizer;
  readonly tokens: TokenAuthenticator;
  readonly followPollMs: number;
  readonly log: Logger;
}

export async function kubeletApiSettings(
  files: KubeletApiFiles,
  kube: KubeClient,
  log: Logger,
): Promise<KubeletApiSettings> {
  return {
    tls: {
      certPem: await readFile(files.certFile, 'utf8'),
      keyPem: await readFile(files.keyFile, 'utf8'),
      clientCaPem: await readFile(files.clientCaFile, 'utf8'),
    },
    authorizer: new SubjectAccessReviewer(kube, {
      allowedTtlMs: DECISION_TTL_MS.allowed,
      deniedTtlMs: DECISION_TTL_MS.denied,
    }),
    tokens: new TokenReviewer(kube),
    followPollMs: 2_000,
    log,
  };
}
