// The virtual node at the size of the convergence phase: the same N GpuPods' workload as plain Pods bound to
// the node (spec.nodeName set as the scheduler's binding would, so the scheduler's speed is not in it), from
// create to Running, then deleted, with no cloud pod left. A fresh operator with --virtual-nodes true runs
// it, the node of a ProviderConfig of the benchmark's account.
import { z } from 'zod';
import { pods, secrets } from '../../src/kube/resource-type.ts';
import { resourceOf } from '../../src/resources/common/kind.ts';
import { providerConfigKind } from '../../src/resources/provider-config/schema.ts';
import { nodeNameOf } from '../../src/virtual-node/names.ts';
import { liveCloudResources } from '../cloud.ts';
import { type Manifest, names, nodePod } from '../manifests.ts';
import { type OperatorRun, startOperator } from '../operator.ts';
import { sleep, until } from '../parallel.ts';
import { createResource, deleteResource, ensureNamespace, type Session } from '../session.ts';
import { API_KEY } from '../stack.ts';
import { isPodRunning, ResourceWatch } from '../watch.ts';
import { type ConvergenceResult, converge } from './convergence.ts';
import { type DeletionResult, measureDeletion } from './deletion.ts';

export interface VirtualNodeResult {
  node: string;
  /** Create → Running (phase Running, Ready True), as the convergence phase's create → Ready. */
  convergence: ConvergenceResult;
  deletion: DeletionResult;
  /** Cloud pods of the Pods' names still alive once every Pod is gone: 0. */
  cloudPodsLeft: number;
  /** Operator warning lines logged, first few kept. */
  operatorWarnings: { count: number; first: string[] };
}

const PROVIDER_CONFIGS = resourceOf(providerConfigKind);

const nodeSchema = z.looseObject({
  status: z
    .looseObject({ conditions: z.array(z.looseObject({ type: z.string(), status: z.string() })).optional() })
    .optional(),
});

/** The ProviderConfig whose account (the benchmark's own key) backs the node, for `namespace`'s Pods. */
function providerConfig(session: Session, name: string, namespace: string, maxPods: number): Manifest {
  return {
    resource: PROVIDER_CONFIGS,
    name,
    body: {
      apiVersion: `${providerConfigKind.group}/${providerConfigKind.version}`,
      kind: providerConfigKind.kind,
      metadata: { name },
      spec: {
        apiUrl: session.stack.sim.url,
        credentials: { secretRef: { namespace, name: 'vnode-key', key: 'api-key' } },
        namespaces: { names: [namespace] },
        virtualNode: { enabled: true, maxPods },
      },
    },
  };
}

/** What Pod admission needs and a controller-manager would make: the namespace's default ServiceAccount. */
function defaultServiceAccount(): Manifest {
  return {
    resource: {
      group: '',
      version: 'v1',
      plural: 'serviceaccounts',
      kind: 'ServiceAccount',
      namespaced: true,
    },
    name: 'default',
    body: { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'default' } },
  };
}

function keySecret(): Manifest {
  return {
    resource: secrets,
    name: 'vnode-key',
    body: {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'vnode-key' },
      stringData: { 'api-key': API_KEY },
    },
  };
}

async function nodeReady(session: Session, node: string): Promise<boolean> {
  const found = await session.stack.kube
    .request(nodeSchema, { method: 'GET', path: `/api/v1/nodes/${node}` })
    .catch(() => undefined);
  return found?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
}

export async function measureVirtualNode(session: Session, size: number): Promise<VirtualNodeResult> {
  const { stack, log } = session;
  const namespace = `vnode-${size}`;
  const config = `bench-vnode-${size}`;
  const node = nodeNameOf(config);
  await ensureNamespace(stack.kube, namespace);
  for (const manifest of [defaultServiceAccount(), keySecret()])
    await createResource(stack.kube, namespace, manifest);
  // maxPods is at most 10,000: the node's capacity, which nothing here checks against (no scheduler).
  await createResource(stack.kube, '', providerConfig(session, config, namespace, Math.min(10_000, size)));
  const watch = new ResourceWatch(stack.kube, pods, namespace, log, isPodRunning);
  await watch.start();
  let operator: OperatorRun | undefined;
  try {
    operator = await startOperator(session, {
      namespace,
      callbacks: true,
      extraFlags: ['--virtual-nodes', 'true'],
    });
    const running = operator;
    await until(
      () => nodeReady(session, node),
      `node ${node} Ready`,
      60_000,
      () => running.warnings().slice(-3).join('\n'),
      500,
    );
    await sleep(2000);
    const manifests = names('vp', size).map((name) => nodePod(name, node));
    log.info({ size, node }, 'virtual node: Pods to Running');
    const convergence = await converge(session, operator, namespace, manifests, [watch]);
    log.info({ size, seconds: convergence.seconds }, 'virtual node: deletion');
    const deletion = await measureDeletion(session, operator, namespace, manifests, [watch]);
    const cloudPodsLeft = liveCloudResources(session, new Set(manifests.map((m) => m.name)));
    const warnings = operator.warnings();
    return {
      node,
      convergence,
      deletion,
      cloudPodsLeft,
      operatorWarnings: { count: warnings.length, first: warnings.slice(0, 5) },
    };
  } finally {
    await operator?.stop();
    await watch.stop();
    await deleteResource(stack.kube, PROVIDER_CONFIGS, '', config);
  }
}
