// The tenant API as the operator runs it: the server, its authoriser and limits, the front-proxy settings
// kept fresh, and, in a cluster, the leader named as the Service's endpoint.
import { readFile } from 'node:fs/promises';
import type { Registry } from 'prom-client';
import type { KubeClient } from '../kube/client.ts';
import type { Logger } from '../lib/logger.ts';
import type { AccountDirectory } from '../managed/accounts/accounts.ts';
import { DECISION_TTL_MS, SubjectAccessReviewer } from '../serving/authorizer.ts';
import { readRequestHeaderSettings } from './front-proxy.ts';
import { API_SERVICE_NAME } from './group.ts';
import { type LeaderEndpoint, publishWhileLeading } from './leader-endpoint.ts';
import { type TenantLimitSettings, TenantLimits } from './limits.ts';
import { TenantApiMetrics } from './metrics.ts';
import { TenantApiServer } from './server.ts';
import { ensureServingSecret, type ServingPair, trustInApiService } from './serving-secret.ts';

export type TlsSource =
  | { readonly certFile: string; readonly keyFile: string }
  | { readonly secret: { readonly namespace: string; readonly name: string; readonly service: string } };

export interface TenantApiOptions {
  readonly port: number;
  readonly host?: string;
  /** Where the serving pair comes from: files (a mounted Secret, cert-manager's), or the operator's own Secret. */
  readonly tls: TlsSource;
  readonly kube: KubeClient;
  readonly accounts: AccountDirectory;
  readonly registry: Registry;
  readonly limits: TenantLimitSettings;
  /** Whether this replica may serve now: the leader's test. */
  readonly serving: () => boolean;
  /** Runs a task each time this replica starts leading: the manager's `whileLeading`. */
  readonly whileLeading: (task: (leading: AbortSignal) => Promise<void>) => void;
  /** In a cluster: the Service whose endpoint the leader names itself. Absent locally (ExternalName). */
  readonly leaderEndpoint?: Omit<LeaderEndpoint, 'port'> | undefined;
  readonly log: Logger;
  /** How often the front-proxy CA and the serving pair are read again (rotation). */
  readonly refreshMs?: number;
  readonly followPollMs?: number;
}

export interface RunningTenantApi {
  readonly port: number;
  close(): Promise<void>;
}

export async function startTenantApi(options: TenantApiOptions): Promise<RunningTenantApi> {
  const { kube, log } = options;
  const { tls } = options;
  const readTls =
    'secret' in tls
      ? () => ensureServingSecret(kube, tls.secret.namespace, tls.secret.name, tls.secret.service)
      : async () => ({
          certPem: await readFile(tls.certFile, 'utf8'),
          keyPem: await readFile(tls.keyFile, 'utf8'),
        });
  // The operator's own pair: its CA goes into the APIService, now and at each refresh (a re-created
  // APIService, or one created after the operator started, gets it within a minute).
  const trust = async (read: { certPem: string } | ServingPair) => {
    if ('caPem' in read && !(await trustInApiService(kube, read.caPem))) {
      log.warn({ apiService: API_SERVICE_NAME }, 'tenant API: no APIService to write the CA into yet');
    }
  };
  const pair = await readTls();
  await trust(pair);
  const metrics = new TenantApiMetrics(options.registry);
  const server = new TenantApiServer({
    port: options.port,
    ...(options.host === undefined ? {} : { host: options.host }),
    tls: pair,
    requestHeader: await readRequestHeaderSettings(kube),
    authorizer: new SubjectAccessReviewer(kube, {
      allowedTtlMs: DECISION_TTL_MS.allowed,
      deniedTtlMs: DECISION_TTL_MS.denied,
    }),
    kube,
    accounts: options.accounts,
    limits: new TenantLimits(options.limits, metrics),
    metrics,
    serving: options.serving,
    followPollMs: options.followPollMs ?? 2_000,
    log,
  });
  await server.start();
  const refresh = setInterval(() => {
    Promise.all([readRequestHeaderSettings(kube), readTls()])
      .then(async ([settings, tls]) => {
        server.update(settings, tls);
        await trust(tls);
      })
      .then(
        () => undefined,
        (error: unknown) =>
          log.warn(
            { err: error },
            'tenant API: could not re-read the front-proxy CA or the serving pair; keeping them',
          ),
      );
  }, options.refreshMs ?? 60_000);
  refresh.unref();
  const { leaderEndpoint } = options;
  if (leaderEndpoint) {
    options.whileLeading((leading) =>
      publishWhileLeading(kube, { ...leaderEndpoint, port: server.port }, leading, log),
    );
  }
  log.info({ port: server.port }, 'tenant API serving');
  return {
    port: server.port,
    close: async () => {
      clearInterval(refresh);
      await server.close();
    },
  };
}
