import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { z } from 'zod';
import { GpuCloudClient } from '../../src/api/client.ts';
import { KubeClient } from '../../src/kube/client.ts';
import { kubeconfigConnection } from '../../src/kube/kubeconfig.ts';
import { collectionPath, objectPath, pods } from '../../src/kube/resource-type.ts';
import { createLogger } from '../../src/lib/logger.ts';
import { type LocalStack, startLocalStack } from '../../src/local/stack.ts';
import { poll } from '../support/until.ts';

// The stack as `npm run local` starts it: kube-scheduler beside the controllers, and the example
// ProviderConfig's virtual node Ready, on which the scheduler places a Pod that tolerates its taint and
// asks for a GPU; a Pod of a namespace the example does not list, placed there too, is refused.
let stack: LocalStack;
let workDir: string;
let admin: KubeClient;

const NODE = 'gpucloud-team-a';
const execFileAsync = promisify(execFile);
const podState = z.looseObject({
  metadata: z.looseObject({
    name: z.string(),
    annotations: z.record(z.string(), z.string()).optional(),
  }),
  spec: z.looseObject({ nodeName: z.string().optional() }),
  status: z.looseObject({ phase: z.string(), reason: z.string().optional() }),
});
const nodeState = z.looseObject({
  status: z.looseObject({ conditions: z.array(z.looseObject({ type: z.string(), status: z.string() })) }),
});

function gpuPod(name: string) {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name },
    spec: {
      nodeSelector: { 'gpucloud.io/gpu-type.NVIDIA-L40S': 'true' },
      tolerations: [{ key: 'gpucloud.io/virtual-node', operator: 'Exists', effect: 'NoSchedule' }],
      containers: [
        { name: 'main', image: 'example/app:1', resources: { limits: { 'nvidia.com/gpu': '1' } } },
      ],
    },
  };
}

const readPod = (namespace: string, name: string) =>
  admin.request(podState, { method: 'GET', path: objectPath(pods, { namespace, name }) });

describe('npm run local: the scheduler and the virtual node', () => {
  before(async () => {
    workDir = await mkdtemp(join(tmpdir(), 'gpucloud-local-vnode-'));
    stack = await startLocalStack(createLogger({ level: 'warn', name: 'local' }), { workDir });
    admin = new KubeClient(kubeconfigConnection(stack.kubeconfigPath));
  });
  after(async () => {
    await stack?.stop();
    await rm(workDir, { recursive: true, force: true });
  });

  test("the example ProviderConfig's virtual node is Ready", async () => {
    await poll(
      () => admin.request(nodeState, { method: 'GET', path: `/api/v1/nodes/${NODE}` }).catch(() => undefined),
      (node) => node?.status.conditions.some((c) => c.type === 'Ready' && c.status === 'True') ?? false,
      `node ${NODE} Ready`,
      60_000,
    );
  });

  test('the scheduler places a GPU Pod that tolerates the taint on it', async () => {
    await admin.request(z.unknown(), {
      method: 'POST',
      path: collectionPath(pods, 'default'),
      body: gpuPod('on-gpu'),
    });
    const placed = await poll(
      () => readPod('default', 'on-gpu'),
      (pod) => pod.spec.nodeName !== undefined,
      'the Pod scheduled',
      60_000,
    );
    assert.equal(placed.spec.nodeName, NODE);
  });

  test("the example Deployment's Pods run on it, each as a cloud pod", async () => {
    const list = z.object({ items: z.array(podState) });
    const running = await poll(
      () =>
        admin.request(list, {
          method: 'GET',
          path: collectionPath(pods, 'default'),
          query: { labelSelector: 'app=inference' },
        }),
      ({ items }) => items.length === 2 && items.every((pod) => pod.status.phase === 'Running'),
      'the example Deployment running',
      120_000,
    );
    assert.deepEqual(
      running.items.map((pod) => pod.spec.nodeName),
      [NODE, NODE],
    );
  });

  test("kubectl logs reads an example Pod's cloud pod log through the node's kubelet API", async () => {
    const list = z.object({ items: z.array(podState) });
    const { items } = await poll(
      () =>
        admin.request(list, {
          method: 'GET',
          path: collectionPath(pods, 'default'),
          query: { labelSelector: 'app=inference' },
        }),
      (found) =>
        found.items.some((pod) => pod.metadata.annotations?.['gpucloud.io/external-id'] !== undefined),
      'an example Pod with its cloud pod',
      120_000,
    );
    const pod = items.find((each) => each.metadata.annotations?.['gpucloud.io/external-id'] !== undefined);
    assert.ok(pod);
    // The example account's key, as the example's Secret holds it: the cloud pod is that account's.
    const secret = await admin.request(z.object({ data: z.record(z.string(), z.string()) }), {
      method: 'GET',
      path: '/api/v1/namespaces/default/secrets/team-a-gpucloud',
    });
    const cloud = new GpuCloudClient({
      baseUrl: stack.simulatorUrl,
      apiKey: Buffer.from(secret.data['api-key'] ?? '', 'base64').toString(),
    });
    try {
      const id = pod.metadata.annotations?.['gpucloud.io/external-id'] ?? '';
      const cloudLines = await poll(
        async () => (await cloud.pods.logs(id, { limit: 1000 })).items.map((line) => line.content),
        (lines) => lines.length > 0,
        'the cloud pod logging',
      );
      const { stdout } = await execFileAsync('kubectl', [
        '--kubeconfig',
        stack.kubeconfigPath,
        'logs',
        '-n',
        'default',
        pod.metadata.name,
      ]);
      // The cloud may have written more since it was read: what it had is where kubectl's answer starts.
      assert.deepEqual(stdout.trimEnd().split('\n').slice(0, cloudLines.length), cloudLines);
    } finally {
      await cloud.close();
    }
  });

  test('a Pod of a namespace the example does not list, placed there, fails NamespaceNotAllowed', async () => {
    await admin.request(z.unknown(), {
      method: 'POST',
      path: '/api/v1/namespaces',
      body: { metadata: { name: 'elsewhere' } },
    });
    // The namespace's default ServiceAccount comes from the serviceaccount controller.
    await poll(
      () =>
        admin
          .request(z.unknown(), {
            method: 'POST',
            path: collectionPath(pods, 'elsewhere'),
            body: gpuPod('stray'),
          })
          .then(() => true)
          .catch(() => false),
      (created) => created,
      'the Pod created',
    );
    const refused = await poll(
      () => readPod('elsewhere', 'stray'),
      (pod) => pod.status.phase === 'Failed',
      'the Pod refused',
      60_000,
    );
    assert.equal(refused.spec.nodeName, NODE);
    assert.equal(refused.status.reason, 'NamespaceNotAllowed');
  });
});
