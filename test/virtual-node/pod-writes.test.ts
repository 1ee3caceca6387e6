import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { isDeepStrictEqual } from 'node:util';
import type { z } from 'zod';
import { apiserverWrites } from '../../bench/prometheus.ts';
import { Informer } from '../../src/kube/informer.ts';
import type { DeepReadonly, KubeObject } from '../../src/kube/object.ts';
import { pods } from '../../src/kube/resource-type.ts';
import { EXTERNAL_ID } from '../../src/managed/core/annotations.ts';
import { captureLogs } from '../support/log-capture.ts';
import { type RunningOperator, resources, startOperator } from '../support/operator.ts';
import { turnsOf } from '../support/reconciled.ts';
import { until } from '../support/until.ts';
import {
  createAccountKey,
  createDefaultServiceAccount,
  podSchema,
  running,
  useTeamsStack,
  VIRTUAL_NODE_TOLERATION,
  waitForNodeReady,
} from '../support/virtual-node.ts';

// The writes the virtual node makes to a Pod it runs, on the real apiserver with the simulator over HTTP,
// every version of the Pod seen through a watch: no write of its own for what another write can carry.
const TEAM_KEY = 'team-a-pod-writes-key';
const stack = useTeamsStack({ 'team-a': TEAM_KEY });
const NS = 'team-a';
const KEY_NS = 'gpucloud-system';
const NODE = 'gpucloud-team-a';

let operator: RunningOperator;
let watch: Informer;
/** Every version of every Pod of NS the watch delivered, in order. */
const versions: Array<z.output<typeof podSchema>> = [];

describe('the writes of the virtual node to its Pods', () => {
  before(async () => {
    const cluster = stack.cluster();
    for (const namespace of [KEY_NS, NS]) await cluster.ensureNamespace(namespace);
    await createDefaultServiceAccount(cluster.client, NS);
    await createAccountKey(cluster.client, KEY_NS, 'team-a', TEAM_KEY);
    await cluster.create(resources.providerConfig, '', {
      apiVersion: 'gpucloud.io/v1alpha1',
      kind: 'ProviderConfig',
      metadata: { name: 'team-a' },
      spec: {
        apiUrl: stack.sim().url,
        credentials: { secretRef: { namespace: KEY_NS, name: 'team-a-key', key: 'api-key' } },
        namespaces: { names: [NS] },
        virtualNode: { enabled: true },
      },
    });
    watch = new Informer(cluster.client, { resource: pods, namespace: NS }, captureLogs('warn').logger);
    const seen = (pod: DeepReadonly<KubeObject>) => versions.push(podSchema.parse(pod));
    watch.addEventHandler({ onAdd: seen, onUpdate: (_old, pod) => seen(pod) });
    watch.start();
    await watch.waitForSync();
    operator = await startOperator(stack.plane(), stack.sim(), {
      apiKey: 'operator-default-key',
      flags: ['--virtual-nodes', 'true'],
    });
    await waitForNodeReady(cluster.client, NODE);
  });
  after(async () => {
    await operator?.stop();
    await watch?.stop();
  });

  test('the cloud id annotation comes in the status write that names the container, not in a write of its own', async () => {
    await stack.cluster().create(pods, NS, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'trainer' },
      spec: {
        nodeName: NODE,
        tolerations: [VIRTUAL_NODE_TOLERATION],
        containers: [
          { name: 'main', image: 'example/app:1', resources: { limits: { 'nvidia.com/gpu': '1' } } },
        ],
      },
    });
    const mine = () => versions.filter((pod) => pod.metadata.name === 'trainer');
    await until(
      () => mine().some((pod) => running(pod) && pod.metadata.annotations?.[EXTERNAL_ID] !== undefined),
      'the Pod Running, naming its cloud pod',
    );
    const [first] = mine().filter((pod) => pod.metadata.annotations?.[EXTERNAL_ID] !== undefined);
    const id = first?.metadata.annotations?.[EXTERNAL_ID];
    assert.ok(id);
    // Every version: the annotation there exactly when the container status names the same cloud pod.
    for (const pod of mine()) {
      const annotated = pod.metadata.annotations?.[EXTERNAL_ID];
      const container = pod.status.containerStatuses?.[0]?.containerID;
      assert.equal(container, annotated === undefined ? undefined : `gpucloud://${annotated}`);
    }
  });

  test('a GpuPod change the Pod does not show wakes no turn of it, and every status write makes a version', async () => {
    // The GpuPod's details are refreshed every 2 s (the tests' --details-interval): each a change of the
    // GpuPod, none of what the Pod's status says.
    const gpuPodVersions: string[] = [];
    const gpuPods = new Informer(
      stack.cluster().client,
      { resource: resources.gpuPod, namespace: NS },
      captureLogs('warn').logger,
    );
    gpuPods.addEventHandler({
      onUpdate: (_old, gpuPod) => {
        if (gpuPod.metadata.name === 'trainer') gpuPodVersions.push(gpuPod.metadata.resourceVersion ?? '');
      },
    });
    gpuPods.start();
    try {
      await gpuPods.waitForSync();
      await until(() => gpuPodVersions.length >= 1, 'a refresh of the GpuPod');
      const key = { controller: 'virtual-node-pods', namespace: NS, name: 'trainer' };
      const turns = turnsOf(operator, key).length;
      const seen = gpuPodVersions.length;
      await until(() => gpuPodVersions.length >= seen + 3, 'three more versions of the GpuPod');
      assert.ok(
        turnsOf(operator, key).length < turns + 3,
        `${turnsOf(operator, key).length - turns} turns of the Pod for 3 GpuPod changes it does not show`,
      );
    } finally {
      await gpuPods.stop();
    }
    const writes = await apiserverWrites(stack.plane().kubeConfig);
    const changes = versions.filter((pod, i) => {
      const previous = versions.slice(0, i).findLast((each) => each.metadata.name === pod.metadata.name);
      return previous !== undefined && !isDeepStrictEqual(previous.status, pod.status);
    });
    assert.equal(writes['PATCH pods/status'], changes.length);
  });
});
