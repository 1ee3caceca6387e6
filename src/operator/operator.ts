import { Manager } from '../controller/manager.ts';
import { loadKubeConnection } from '../kube/connection.ts';
import { type Clock, systemClock } from '../lib/clock.ts';
import type { Logger } from '../lib/logger.ts';
import { AccountMetering } from '../managed/accounts/account-links.ts';
import {
  AccountRegistry,
  type ClientSettings,
  makeAccount,
  openPolicy,
  RotatingKey,
  readKeyFile,
  watchKeyFile,
} from '../managed/accounts/account-registry.ts';
import type { AccountDirectory } from '../managed/accounts/accounts.ts';
import { DEFAULT_ACCOUNT } from '../managed/core/account-ref.ts';
import { FleetMetrics } from '../managed/core/fleet-metrics.ts';
import type { ManagedControllerSettings } from '../managed/reconciler/kind-controller.ts';
import { gpuPodKind, registrations, resourceOf } from '../resources/kinds.ts';
import { addProviderConfigController } from '../resources/provider-config/controller.ts';
import { type RunningTenantApi, startTenantApi } from '../tenant-api/tenant-api.ts';
import type { KubeletEndpoints } from '../virtual-node/kubelet-api/endpoints.ts';
import { kubeletApiSettings } from '../virtual-node/kubelet-api/kubelet-api.ts';
import type { AccountEntries } from '../virtual-node/node-controller.ts';
import { addVirtualNodes } from '../virtual-node/virtual-nodes.ts';
import { callbackUrl, startCallbackServer } from './callback-server.ts';
import { insecureApiUrl, type OperatorConfig } from './config.ts';

export const OPERATOR_NAME = 'gpucloud-operator';

/**
 * Runs the operator until `signal` aborts (graceful: in-flight reconciles finish, the lease is
 * released) or leadership is lost (rejects with `LeadershipLostError`: exit and let the pod restart).
 */
export async function runOperator(
  config: OperatorConfig,
  logger: Logger,
  signal: AbortSignal,
  clock: Clock = systemClock,
): Promise<void> {
  const manager = new Manager({
    name: OPERATOR_NAME,
    connection: await loadKubeConnection({ kubeconfigPath: config.kubeconfig, context: config.context }),
    logger,
    leaderElection: config.leaderElect
      ? {
          lease: { namespace: config.leaseNamespace, name: config.leaseName },
          leaseDurationMs: config.leaseDurationSeconds * 1000,
          renewDeadlineMs: config.renewDeadlineSeconds * 1000,
          retryPeriodMs: config.retryPeriodSeconds * 1000,
        }
      : undefined,
    health: { port: config.healthPort },
  });
  const clients: ClientSettings = {
    requestTimeoutMs: Math.ceil(config.apiTimeoutSeconds * 1000),
    requestsPerSecond: config.apiRequestsPerSecond,
    logger,
    registry: manager.registry,
  };
  // The flags' account: the implicit `default`, its key re-read when the mounted file changes.
  const { apiKeyFile } = config;
  const key = new RotatingKey(
    config.apiKey,
    apiKeyFile ? readKeyFile(apiKeyFile) : async () => config.apiKey,
  );
  const stopWatchingKey = apiKeyFile ? watchKeyFile(apiKeyFile, key, logger) : () => undefined;
  const defaultAccount = makeAccount(
    DEFAULT_ACCOUNT,
    config.apiUrl,
    key,
    openPolicy(config.defaultAdoption),
    clients,
  );
  const accounts = new AccountRegistry({ account: defaultAccount, key });
  const podCallbackUrl =
    config.callbackBaseUrl && config.callbackToken
      ? callbackUrl(config.callbackBaseUrl, config.callbackToken)
      : undefined;
  const settings = controllerSettings(
    config,
    clock,
    accounts,
    new FleetMetrics(manager.registry, () => manager.mayAct()),
  );
  const handles = new Map(
    registrations.map((kind) => [
      kind.definition.kind,
      kind.controller({ callbackUrl: podCallbackUrl, queueIntervalMs: config.queueIntervalSeconds * 1000 })(
        manager,
        settings,
        logger,
      ),
    ]),
  );

  addProviderConfigController(manager, {
    accounts,
    clients,
    managed: registrations.map(({ definition }) => resourceOf(definition)),
    namespaces: config.namespace,
    virtualNodes: config.virtualNodes,
    clock,
    log: logger.child({ controller: 'providerconfig' }),
  });

  const kubeletApi = config.virtualNodes
    ? await startVirtualNodes(config, manager, accounts, clock, logger)
    : undefined;

  const callbacks =
    config.callbackPort && config.callbackToken
      ? await startCallbackServer({
          port: config.callbackPort,
          host: config.callbackBindAddress,
          token: config.callbackToken,
          onHint: (podId, status) => handles.get(gpuPodKind.kind)?.hint(podId, status),
          log: logger.child({ component: 'callbacks' }),
        })
      : undefined;
  const tenantApi = await startTenantApiOf(config, manager, accounts, logger);
  if (insecureApiUrl(config.apiUrl)) {
    logger.warn(
      { apiUrl: config.apiUrl },
      'the API URL is plain http to another host: the API key crosses the network in clear',
    );
  }
  manager.addReadyCheck('cloud-api-key', () => {
    if (!defaultAccount.client.keyRejected()) return true;
    return 'the cloud API rejected the API key of the operator flags (HTTP 401): put a valid key in the key file or GPUCLOUD_API_KEY';
  });
  logger.info(
    {
      apiUrl: config.apiUrl,
      namespaces: config.namespace.length > 0 ? config.namespace : '(all)',
      leaderElect: config.leaderElect,
      virtualNodes: config.virtualNodes,
    },
    'operator starting',
  );
  try {
    await manager.run(signal);
  } finally {
    await tenantApi?.close();
    await kubeletApi?.stopAll();
    await callbacks?.close();
    stopWatchingKey();
    await accounts.close();
  }
}

/**
 * The virtual nodes' controllers (docs/virtual-node.md), and their kubelet API when its serving pair and
 * client CA are given. Only with --virtual-nodes: they need cluster-wide grants on Nodes, Pods and
 * ConfigMaps that an operator without them is not given.
 */
async function startVirtualNodes(
  config: OperatorConfig,
  manager: Manager,
  accounts: AccountEntries,
  clock: Clock,
  logger: Logger,
): Promise<KubeletEndpoints | undefined> {
  const { virtualNodeTlsCertFile, virtualNodeTlsKeyFile, virtualNodeClientCaFile } = config;
  const kubeletApi =
    virtualNodeTlsCertFile && virtualNodeTlsKeyFile && virtualNodeClientCaFile
      ? await kubeletApiSettings(
          {
            certFile: virtualNodeTlsCertFile,
            keyFile: virtualNodeTlsKeyFile,
            clientCaFile: virtualNodeClientCaFile,
          },
          manager.client,
          logger.child({ component: 'kubelet-api' }),
        )
      : undefined;
  return addVirtualNodes(manager, {
    accounts,
    address: config.virtualNodeAddress,
    ports: config.virtualNodePorts,
    kubeletApi,
    namespaces: config.namespace,
    concurrency: config.concurrency,
    clock,
    log: logger.child({ controller: 'virtual-node' }),
  });
}

/**
 * The tenant API (docs/design.md §12), when a port is set. It serves on the leader only, which holds the
 * accounts' live clients; in a cluster the leader names itself the endpoint of the API's Service.
 */
async function startTenantApiOf(
  config: OperatorConfig,
  manager: Manager,
  accounts: AccountDirectory,
  logger: Logger,
): Promise<RunningTenantApi | undefined> {
  const { tenantApiPort, tenantApiCertFile, tenantApiKeyFile, tenantApiTlsSecret } = config;
  if (tenantApiPort === 0) return undefined;
  const advertise = config.tenantApiAdvertiseAddress;
  const service = config.tenantApiService;
  const namespace = config.tenantApiNamespace;
  const tls =
    tenantApiCertFile && tenantApiKeyFile
      ? { certFile: tenantApiCertFile, keyFile: tenantApiKeyFile }
      : { secret: { namespace, name: tenantApiTlsSecret ?? '', service: service ?? '' } };
  return startTenantApi({
    port: tenantApiPort,
    host: config.tenantApiBindAddress,
    tls,
    kube: manager.client,
    accounts,
    registry: manager.registry,
    limits: {
      callsPerSecond: config.tenantApiRequestsPerSecond,
      maxWaiting: Math.max(10, Math.ceil(config.tenantApiRequestsPerSecond * 5)),
      streamsPerUser: config.tenantApiStreamsPerUser,
      streamsPerAccount: config.tenantApiStreamsPerAccount,
    },
    serving: () => manager.mayAct(),
    whileLeading: (task) => manager.whileLeading(task),
    leaderEndpoint:
      advertise && service ? { namespace, service, portName: 'https', address: advertise } : undefined,
    log: logger.child({ component: 'tenant-api' }),
  });
}

function controllerSettings(
  config: OperatorConfig,
  clock: Clock,
  accounts: AccountDirectory,
  fleet: FleetMetrics,
): ManagedControllerSettings {
  const requestTimeoutMs = config.apiTimeoutSeconds * 1000;
  return {
    namespaces: config.namespace,
    concurrency: config.concurrency,
    pollIntervalMs: config.pollIntervalSeconds * 1000,
    refreshMinIntervalMs: 1000,
    resyncPeriodMs: config.resyncMinutes * 60_000,
    detailsCallsPerSecond: config.detailsCallsPerSecond,
    detailsIntervalMs: config.detailsIntervalSeconds * 1000,
    idleChecksPerSecond: config.idleChecksPerSecond,
    idleCheckIntervalMs: config.idleCheckIntervalSeconds * 1000,
    verifyAfterMs: config.pollIntervalSeconds * 1000,
    secretRecheckMs: config.secretIntervalSeconds * 1000,
    accounts,
    fleet,
    metering: new AccountMetering(),
    clock,
    // An interrupted create is searched for only with lists that started after any create it could
    // have sent had time to answer: one request timeout, plus retries' worth of slack.
    creation: { graceMs: 2 * requestTimeoutMs, skewMs: 5 * 60_000 },
  };
}
