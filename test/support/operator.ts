// Runs the real operator in-process against a real control plane and the simulator over HTTP, and gives
// tests small typed helpers to drive custom resources and wait for what the operator does.
import { Writable } from 'node:stream';
import { after, before } from 'node:test';
import { z } from 'zod';
import { isStatus, KubeClient } from '../../src/kube/client.ts';
import { collectionPath, objectPath, type ResourceType } from '../../src/kube/resource-type.ts';
import type { Clock } from '../../src/lib/clock.ts';
import { createLogger } from '../../src/lib/logger.ts';
import { type ControlPlane, startControlPlane } from '../../src/local/controlplane.ts';
import { CREATE_INTENT, CREATE_NAME } from '../../src/managed/core/annotations.ts';
import { sealIntent } from '../../src/managed/creation/creation.ts';
import { loadConfig } from '../../src/operator/config.ts';
import { runOperator } from '../../src/operator/operator.ts';
import {
  gpuPodKind,
  gpuVmKind,
  providerConfigKind,
  resourceOf,
  serverlessEndpointKind,
  serverlessTaskKind,
} from '../../src/resources/kinds.ts';
import { type ApiKeyOption, type RunningSimulator, startSimulator } from '../../src/sim/index.ts';
import { installCrds } from './crds.ts';
import { poll } from './until.ts';

export const API_KEY = 'test-key-9f8e7d6c5b4a';

export const resources = {
  gpuPod: resourceOf(gpuPodKind),
  gpuVm: resourceOf(gpuVmKind),
  serverlessEndpoint: resourceOf(serverlessEndpointKind),
  serverlessTask: resourceOf(serverlessTaskKind),
  providerConfig: resourceOf(providerConfigKind),
  secret: { group: '', version: 'v1', plural: 'secrets', kind: 'Secret', namespaced: true },
  event: { group: '', version: 'v1', plural: 'events', kind: 'Event', namespaced: true },
} satisfies Record<string, ResourceType>;

/** A custom resource as tests read it: loosely typed, asserted on field by field. */
export const objectSchema = z.looseObject({
  metadata: z.looseObject({
    name: z.string(),
    namespace: z.string().optional(),
    uid: z.string(),
    generation: z.number().optional(),
    annotations: z.record(z.string(), z.string()).optional(),
    finalizers: z.array(z.string()).optional(),
    deletionTimestamp: z.string().optional(),
  }),
  spec: z.record(z.string(), z.unknown()).optional(),
  status: z
    .looseObject({
      id: z.string().optional(),
      phase: z.string().optional(),
      observedGeneration: z.number().optional(),
      conditions: z
        .array(
          z.looseObject({ type: z.string(), status: z.string(), reason: z.string(), message: z.string() }),
        )
        .optional(),
    })
    .optional(),
});
export type TestObject = z.output<typeof objectSchema>;

const eventList = z.object({
  items: z.array(
    z.looseObject({
      reason: z.string(),
      message: z.string(),
      type: z.string(),
      count: z.number().optional(),
      involvedObject: z.looseObject({ name: z.string() }),
    }),
  ),
});

export function condition(obj: TestObject | undefined, type: string) {
  return obj?.status?.conditions?.find((c) => c.type === type);
}

/** Typed access to the test cluster. */
export class Cluster {
  readonly client: KubeClient;

  constructor(plane: ControlPlane) {
    this.client = new KubeClient(plane.connection);
  }

  create(resource: ResourceType, namespace: string, body: Record<string, unknown>): Promise<TestObject> {
    return this.client.request(objectSchema, {
      method: 'POST',
      path: collectionPath(resource, namespace),
      body,
    });
  }

  async get(resource: ResourceType, namespace: string, name: string): Promise<TestObject | undefined> {
    try {
      return await this.client.request(objectSchema, {
        method: 'GET',
        path: objectPath(resource, { namespace, name }),
      });
    } catch (error) {
      if (isStatus(error, 404)) return undefined;
      throw error;
    }
  }

  patch(
    resource: ResourceType,
    namespace: string,
    name: string,
    body: Record<string, unknown>,
  ): Promise<TestObject> {
    return this.client.request(objectSchema, {
      method: 'PATCH',
      path: objectPath(resource, { namespace, name }),
      body,
    });
  }

  async delete(resource: ResourceType, namespace: string, name: string): Promise<void> {
    await this.client.request(z.unknown(), {
      method: 'DELETE',
      path: objectPath(resource, { namespace, name }),
    });
  }

  /** Polls until `check` passes on the object (or on its absence), failing with the last state seen. */
  async waitFor(
    resource: ResourceType,
    namespace: string,
    name: string,
    check: (obj: TestObject | undefined) => boolean,
    what: string,
    timeoutMs = 30_000,
  ): Promise<TestObject | undefined> {
    return poll(
      () => this.get(resource, namespace, name),
      check,
      `${resource.kind} ${namespace}/${name}: ${what}`,
      timeoutMs,
    );
  }

  async events(namespace: string, name: string) {
    const list = await this.client.request(eventList, {
      method: 'GET',
      path: collectionPath(resources.event, namespace),
    });
    return list.items.filter((event) => event.involvedObject.name === name);
  }

  /**
   * How many times events of `reason` were told about the object: the recorder folds a repeat into its
   * Event's `count`, so counting Event objects cannot see one.
   */
  async occurrences(namespace: string, name: string, reason: string): Promise<number> {
    const events = await this.events(namespace, name);
    return events.filter((event) => event.reason === reason).reduce((sum, e) => sum + (e.count ?? 1), 0);
  }

  async ensureNamespace(name: string): Promise<void> {
    try {
      await this.client.request(z.unknown(), {
        method: 'POST',
        path: '/api/v1/namespaces',
        body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name } },
      });
    } catch (error) {
      if (!isStatus(error, 409)) throw error;
    }
  }
}

export interface RunningOperator {
  /** Every log line the operator wrote, as JSON text. */
  readonly logs: string[];
  /** What the health server answers on `path` (`/metrics`, `/readyz?verbose`), once it listens. */
  fetchHealth(path: string): Promise<{ status: number; body: string }>;
  /** Graceful stop, as SIGTERM would do it. */
  stop(): Promise<void>;
}

const healthListening = z.object({ msg: z.literal('health and metrics server listening'), port: z.number() });

export interface OperatorOptions {
  flags?: string[];
  apiKey?: string;
  /** Another identity than the admin, e.g. a ServiceAccount's. */
  kubeconfigPath?: string;
  /** Where the operator reads the time: the simulator's clock, to move both together. */
  clock?: Clock;
}

/** Starts the operator as `npm start` would, but in this process, with its logs captured. */
export async function startOperator(
  plane: ControlPlane,
  sim: RunningSimulator,
  options: OperatorOptions = {},
) {
  const config = loadConfig(
    [
      '--kubeconfig',
      options.kubeconfigPath ?? plane.kubeconfigPath,
      '--api-url',
      sim.url,
      '--health-port',
      '0',
      '--poll-interval',
      '1',
      '--details-interval',
      '2',
      '--details-rps',
      '50',
      '--log-level',
      'debug',
      ...(options.flags ?? []),
    ],
    { GPUCLOUD_API_KEY: options.apiKey ?? API_KEY },
  );
  const logs: string[] = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      logs.push(...String(chunk).split('\n').filter(Boolean));
      done();
    },
  });
  const logger = createLogger({ level: config.logLevel, destination });
  const shutdown = new AbortController();
  const running = runOperator(config, logger, shutdown.signal, options.clock);
  running.catch(() => undefined);
  return {
    logs,
    fetchHealth: async (path) => {
      const line = await poll(
        async () =>
          logs.map((text) => healthListening.safeParse(JSON.parse(text))).find((parsed) => parsed.success),
        (found) => found !== undefined,
        'the health server log line',
      );
      const port = line?.data?.port;
      const response = await fetch(`http://127.0.0.1:${port}${path}`);
      return { status: response.status, body: await response.text() };
    },
    stop: async () => {
      shutdown.abort();
      await running;
    },
  } satisfies RunningOperator;
}

/**
 * The operator for the tests of the `describe` this is called in, with `namespaces` there for them: started
 * before its first test, stopped after its last. Inside a `describe`, its hooks run once the stack is up.
 */
export function useOperator(
  stack: Stack,
  namespaces: readonly string[],
  options: OperatorOptions = {},
): () => RunningOperator {
  let operator: RunningOperator | undefined;
  before(async () => {
    for (const namespace of namespaces) await stack.cluster().ensureNamespace(namespace);
    operator = await startOperator(stack.plane(), stack.sim(), options);
  });
  after(async () => {
    await operator?.stop();
  });
  return () => required(operator, 'operator');
}

export interface Stack {
  plane(): ControlPlane;
  sim(): RunningSimulator;
  cluster(): Cluster;
}

/**
 * One control plane (CRDs installed) and one simulator for a test file. Started in a single hook:
 * node:test runs a file's top-level `before` hooks concurrently.
 */
export function useStack(
  simOptions: { transitionMs?: number; retentionMs?: number; apiKeys?: ApiKeyOption[] } = {},
): Stack {
  let plane: ControlPlane | undefined;
  let sim: RunningSimulator | undefined;
  let cluster: Cluster | undefined;
  before(async () => {
    plane = await startControlPlane();
    await installCrds(plane.connection);
    sim = await startSimulator({
      apiKeys: [API_KEY],
      transitionMs: simOptions.transitionMs ?? 50,
      ...simOptions,
    });
    cluster = new Cluster(plane);
  });
  after(async () => {
    await sim?.stop();
    await plane?.stop();
  });
  return {
    plane: () => required(plane, 'control plane'),
    sim: () => required(sim, 'simulator'),
    cluster: () => required(cluster, 'cluster'),
  };
}

function required<T>(value: T | undefined, what: string): T {
  if (value === undefined) throw new Error(`the ${what} is available only inside tests`);
  return value;
}

/** Ready=True, optionally with a given reason. */
export function isReady(reason?: string) {
  return (obj: TestObject | undefined): boolean => {
    const ready = condition(obj, 'Ready');
    return ready?.status === 'True' && (reason === undefined || ready.reason === reason);
  };
}

type Fields = Record<string, unknown>;

/** Minimal valid manifests of each kind; `spec` overrides or adds fields, `metadata` merges. */
export const manifests = {
  gpuPod: (name: string, spec: Fields = {}, metadata: Fields = {}) => ({
    apiVersion: 'gpucloud.io/v1alpha1',
    kind: 'GpuPod',
    metadata: { name, ...metadata },
    spec: { image: 'ubuntu:24.04', gpuType: 'NVIDIA L40S', gpuCount: 1, ...spec },
  }),
  gpuVm: (name: string, spec: Fields = {}, metadata: Fields = {}) => ({
    apiVersion: 'gpucloud.io/v1alpha1',
    kind: 'GpuVm',
    metadata: { name, ...metadata },
    spec: { vmTypeId: 401, region: 'us-east-1', isSpot: false, ...spec },
  }),
  serverlessEndpoint: (name: string, spec: Fields = {}, metadata: Fields = {}) => ({
    apiVersion: 'gpucloud.io/v1alpha1',
    kind: 'ServerlessEndpoint',
    metadata: { name, ...metadata },
    spec: {
      image: 'vllm/vllm-openai:v0.6.0',
      resources: [{ region: 'us-east-1', gpuType: 'NVIDIA GeForce RTX 4090', gpuCount: 1 }],
      workers: 1,
      serviceMode: 'QUEUE',
      ...spec,
    },
  }),
  serverlessTask: (name: string, endpoint: string, spec: Fields = {}, metadata: Fields = {}) => ({
    apiVersion: 'gpucloud.io/v1alpha1',
    kind: 'ServerlessTask',
    metadata: { name, ...metadata },
    spec: { endpointRef: { name: endpoint }, input: { prompt: 'a lighthouse at dusk' }, ...spec },
  }),
};

/**
 * The create-intent annotations a process of the operator (whose key is `API_KEY`) writes before a create,
 * dated `at`: what a crash between the create and the recorded id leaves behind.
 */
export function operatorIntent(uid: string, cloudName: string, at = Date.now() - 10 * 60_000) {
  return { [CREATE_INTENT]: `${at}.${sealIntent(API_KEY, uid, at, cloudName)}`, [CREATE_NAME]: cloudName };
}

/** What the simulated cloud holds under a name, by kind. */
export function cloudObjects(sim: RunningSimulator) {
  const state = () => sim.state.snapshot();
  return {
    pods: (name: string) => state().pods.filter((pod) => pod.name === name),
    vms: (name: string) => state().vms.filter((vm) => vm.name === name),
    endpoints: (name: string) => state().endpoints.filter((endpoint) => endpoint.name === name),
  };
}
