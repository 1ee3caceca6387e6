import { randomBytes } from 'node:crypto';
import { copyFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { KubeClient } from '../kube/client.ts';
import { collectionPath, deployments, secrets } from '../kube/resource-type.ts';
import type { Logger } from '../lib/logger.ts';
import { loadConfig } from '../operator/config.ts';
import { runOperator } from '../operator/operator.ts';
import { kinds, providerConfigKind, resourceOf } from '../resources/kinds.ts';

import { type RunningSimulator, startSimulator } from '../sim/index.ts';
import type { RunningControllerManager } from './controller-manager.ts';
import { freeLoopbackPorts } from './controlplane/ports.ts';
import { type ControlPlane, startControlPlane } from './controlplane.ts';
import { apply, installCrds, readManifests } from './manifests.ts';
import { startNodeCluster, startSchedulingCluster } from './node-cluster.ts';
import { makeServingPair, registerTenantApi } from './tenant-api.ts';
import { virtualNodeTls } from './virtual-node-serving.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const NAMESPACE = 'default';
const TEAM_A_EXAMPLE_KEY = 'team-a-example-key-replace-me';

export interface LocalStack {
  /** A stable copy of the admin kubeconfig, for kubectl in another terminal. */
  kubeconfigPath: string;
  simulatorUrl: string;
  apiKey: string;
  /** The operator's Prometheus metrics, fleet gauges included. */
  metricsUrl: string;
  /** kube-controller-manager's controllers, as a cluster runs them: role aggregation, namespaces, ... */
  controllers: RunningControllerManager;
  /** The Ready node's name, when started with `node: true`. */
  nodeName?: string;
  stop(): Promise<void>;
}

export interface LocalStackOptions {
  /** Also a real node (./node.ts), so that Pods run on this machine as well as on the virtual node. */
  node?: boolean;
  workDir?: string;
}

/**
 * Everything a user needs to try the operator with no cluster and no cloud: a real control plane with the
 * controllers of kube-controller-manager a cluster's users and workloads rely on and kube-scheduler (and with
 * `node` a node that runs Pods), the simulator (with pod callbacks wired to the operator), the CRDs, the
 * operator, and the examples, whose ProviderConfig registers its virtual node.
 */
export async function startLocalStack(logger: Logger, options: LocalStackOptions = {}): Promise<LocalStack> {
  const workDir = options.workDir ?? join(ROOT, '.local');
  const started: Array<() => Promise<void>> = [];
  const stop = async () => {
    for (const step of started.reverse()) await step();
  };
  try {
    const plane = await startControlPlane();
    started.push(() => plane.stop());
    const client = new KubeClient(plane.connection);
    await installCrds(client, join(ROOT, 'crds'));
    // After the CRDs, so that its first discovery has them (else the HPA and quota controllers learn of
    // them only at their next, 30 s later); awaited last, so that it starts (with the scheduler, and the
    // node if asked) while the rest does.
    const starting: Promise<Cluster> = options.node ? startNodeCluster(plane) : startSchedulingCluster(plane);
    starting.catch(() => undefined); // a failure is thrown where it is awaited, below
    started.push(async () => (await starting.catch(() => undefined))?.stop());
    const apiKey = `local-${randomBytes(12).toString('hex')}`;
    // The second key is the one examples/providerconfig-team-a.yaml puts in its Secret: team-a's own
    // organisation, so the example account works here as it would with a real key.
    const sim = await startSimulator({
      apiKeys: [apiKey, { key: TEAM_A_EXAMPLE_KEY, org: 'team-a' }],
      transitionMs: 2000,
    });
    started.push(() => sim.stop());
    const [healthPort = 0, tenantApiPort = 0, kubeletPort = 0] = await freeLoopbackPorts(3);
    const tenantApi = await makeServingPair(join(plane.dataDir, 'tenant-api'));
    const operator = await startOperator(plane, sim, apiKey, logger, healthPort, [
      '--virtual-node-ports',
      String(kubeletPort),
      ...(await virtualNodeTls(plane, ['127.0.0.1'])).flags,
      '--tenant-api-port',
      String(tenantApiPort),
      '--tenant-api-bind-address',
      '127.0.0.1',
      '--tenant-api-cert-file',
      tenantApi.certFile,
      '--tenant-api-key-file',
      tenantApi.keyFile,
    ]);
    started.push(operator);
    await registerTenantApi(client, tenantApiPort, tenantApi.caPem);
    await applyExamples(client, sim.url);
    await mkdir(workDir, { recursive: true });
    const kubeconfigPath = join(workDir, 'kubeconfig');
    await copyFile(plane.kubeconfigPath, kubeconfigPath);
    const cluster = await starting;
    return {
      kubeconfigPath,
      simulatorUrl: sim.url,
      apiKey,
      metricsUrl: `http://127.0.0.1:${healthPort}/metrics`,
      controllers: cluster.controllerManager,
      ...(cluster.node ? { nodeName: cluster.node.name } : {}),
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** What runs beside the apiserver: kube-controller-manager, kube-scheduler and with `node` a node. */
interface Cluster {
  controllerManager: RunningControllerManager;
  node?: { name: string };
  stop(): Promise<void>;
}

async function startOperator(
  plane: ControlPlane,
  sim: RunningSimulator,
  apiKey: string,
  logger: Logger,
  healthPort: number,
  servingFlags: readonly string[],
) {
  const [callbackPort = 0] = await freeLoopbackPorts(1);
  const config = loadConfig(
    [
      '--kubeconfig',
      plane.kubeconfigPath,
      '--api-url',
      sim.url,
      '--poll-interval',
      '5',
      '--details-interval',
      '30',
      '--callback-port',
      String(callbackPort),
      '--health-port',
      String(healthPort),
      '--callback-base-url',
      `http://127.0.0.1:${callbackPort}`,
      // The example ProviderConfig registers a virtual node. The operator runs as the control plane's admin
      // here, so it lacks no grant the chart would give only with virtualNode.enabled.
      '--virtual-nodes',
      'true',
      ...servingFlags,
    ],
    { GPUCLOUD_API_KEY: apiKey, GPUCLOUD_CALLBACK_TOKEN: randomBytes(16).toString('hex') },
  );
  const shutdown = new AbortController();
  const running = runOperator(config, logger, shutdown.signal);
  running.catch((error: unknown) => logger.fatal({ err: error }, 'operator stopped'));
  return async () => {
    shutdown.abort();
    await running.catch(() => undefined);
  };
}

/**
 * Applies every object of examples/: the custom resources, the Secrets they read and the Deployment that
 * reads a connection Secret (no controller runs it here: it is there to be read). A ProviderConfig is
 * pointed at the local simulator instead of the API URL it shows.
 */
async function applyExamples(client: KubeClient, simulatorUrl: string): Promise<void> {
  const types = [secrets, deployments, ...kinds.map(resourceOf)];
  for (const manifest of await readManifests(join(ROOT, 'examples'))) {
    const type = types.find((candidate) => candidate.kind === manifest.kind);
    if (!type) throw new Error(`examples/ holds a ${manifest.kind}, which the local stack does not know`);
    const local =
      manifest.kind === providerConfigKind.kind
        ? { ...manifest, spec: { ...providerConfigKind.spec.parse(manifest.spec), apiUrl: simulatorUrl } }
        : manifest;
    await apply(client, collectionPath(type, NAMESPACE), local);
  }
}
