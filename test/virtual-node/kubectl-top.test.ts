import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { z } from 'zod';
import { objectPath, pods } from '../../src/kube/resource-type.ts';
import { freePorts, kubeletApiFiles, type OwnedAddress, ownedAddress } from '../support/kubelet-api.ts';
import { type RunningMetricsServer, startMetricsServer } from '../support/metrics-server.ts';
import { type RunningOperator, resources, startOperator } from '../support/operator.ts';
import { poll } from '../support/until.ts';
import {
  createAccountKey,
  createDefaultServiceAccount,
  useTeamsStack,
  virtualNodeProviderConfig,
} from '../support/virtual-node.ts';

// `kubectl top` of a Pod on a virtual node, end to end: the real metrics-server, run as its own manifests
// run it, scrapes the node's /metrics/resource on the port the node names, with its ServiceAccount's token,
// and the real kubectl reads the metrics API through the apiserver's aggregator.
const TEAM_KEY = 'team-a-top-key';
const stack = useTeamsStack({ 'team-a': TEAM_KEY });
const CONFIG = 'team-a';
const NODE = 'gpucloud-team-a';
const NS = 'team-a';
const KEY_NS = 'gpucloud-system';
const KUBECTL = '/usr/bin/kubectl';
const execFileAsync = promisify(execFile);

let operator: RunningOperator;
let metricsServer: RunningMetricsServer | undefined;

async function kubectl(args: readonly string[]) {
  try {
    const { stdout, stderr } = await execFileAsync(KUBECTL, [
      '--kubeconfig',
      stack.plane().kubeconfigPath,
      ...args,
    ]);
    return { code: 0, stdout, stderr };
  } catch (error) {
    const exit = error as { code?: number; stdout?: string; stderr?: string };
    return { code: exit.code ?? -1, stdout: exit.stdout ?? '', stderr: exit.stderr ?? '' };
  }
}

const gpuPodMetrics = z.looseObject({
  status: z
    .looseObject({ metrics: z.looseObject({ memoryUsedBytes: z.number().optional() }).optional() })
    .optional(),
});

/** The node's InternalIP: an address the test makes, neither loopback nor this machine's own. */
let owned: OwnedAddress | undefined;

describe('kubectl top of a Pod on a virtual node, through metrics-server', () => {
  before(async () => {
    const cluster = stack.cluster();
    const admin = cluster.client;
    for (const namespace of [KEY_NS, NS]) await cluster.ensureNamespace(namespace);
    await createDefaultServiceAccount(admin, NS);
    await createAccountKey(admin, KEY_NS, CONFIG, TEAM_KEY);
    await cluster.create(
      resources.providerConfig,
      '',
      virtualNodeProviderConfig({
        name: CONFIG,
        namespace: NS,
        apiUrl: stack.sim().url,
        keyNamespace: KEY_NS,
      }),
    );
    owned = await ownedAddress();
    const { address } = owned;
    const files = await kubeletApiFiles(stack.plane(), [address]);
    const first = await freePorts(2);
    operator = await startOperator(stack.plane(), stack.sim(), {
      apiKey: 'operator-default-key',
      flags: [
        '--virtual-nodes',
        'true',
        '--virtual-node-address',
        address,
        '--virtual-node-ports',
        `${first}-${first + 1}`,
        ...files.flags,
      ],
    });
    await cluster.create(pods, NS, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'trainer' },
      spec: {
        nodeName: NODE,
        tolerations: [{ key: 'gpucloud.io/virtual-node', operator: 'Exists', effect: 'NoSchedule' }],
        containers: [
          { name: 'main', image: 'example/app:1', resources: { limits: { 'nvidia.com/gpu': '1' } } },
        ],
      },
    });
    metricsServer = await startMetricsServer(stack.plane(), admin, stack.plane().layout.clusterCa);
  });
  after(async () => {
    await metricsServer?.stop();
    await operator?.stop();
    await owned?.release();
  });

  test('kubectl top pod shows the Pod’s CPU and memory, and kubectl top node the node’s', async () => {
    // metrics-server reports a Pod once two scrapes apart have seen it running with a sample.
    const top = await poll(
      () => kubectl(['top', 'pod', 'trainer', '-n', NS, '--no-headers']),
      (run) => run.code === 0,
      `kubectl top pod (metrics-server: ${metricsServer?.output().slice(-2000)})`,
      120_000,
    );
    const [name, cpu, memory] = top.stdout.trim().split(/\s+/);
    assert.equal(name, 'trainer');
    assert.match(cpu ?? '', /^[1-9]\d*m$/, `CPU in millicores: ${top.stdout}`);
    assert.match(memory ?? '', /^[1-9]\d*Mi$/, `memory in MiB: ${top.stdout}`);
    // The working set is the GpuPod's latest sample (metrics-server and the GpuPod may be a sample apart).
    const gpuPod = await stack.cluster().client.request(gpuPodMetrics, {
      method: 'GET',
      path: objectPath(resources.gpuPod, { namespace: NS, name: 'trainer' }),
    });
    assert.ok((gpuPod.status?.metrics?.memoryUsedBytes ?? 0) > 0);

    const node = await poll(
      () => kubectl(['top', 'node', NODE, '--no-headers']),
      (run) => run.code === 0,
      'kubectl top node',
      60_000,
    );
    const [nodeName, nodeCpu] = node.stdout.trim().split(/\s+/);
    assert.equal(nodeName, NODE);
    assert.match(nodeCpu ?? '', /^[1-9]\d*m$/, node.stdout);
  });
});
