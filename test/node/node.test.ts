import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readdir } from 'node:fs/promises';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { CoreV1Api, type V1Pod } from '@kubernetes/client-node';
import { type ControlPlane, startControlPlane } from '../../src/local/controlplane.ts';
import { readSysctls } from '../../src/local/node/sysctls.ts';
import { SANDBOX_IMAGE } from '../../src/local/node.ts';
import { type NodeCluster, startNodeCluster } from '../../src/local/node-cluster.ts';
import { eventually } from '../support/eventually.ts';

// A real node (containerd, runc, the CNI bridge, a kubelet) under the local control plane, with the
// scheduler: a Pod under the restricted profile runs on it, its logs come back through the apiserver and
// the kubelet, a killed container is restarted by the kubelet, and the host is as it was afterwards.

const execFileAsync = promisify(execFile);
const NAMESPACE = 'node-test';
const POD = 'talker';
/** The first line the pause binary prints (tools/node/pause): its uid as the runtime set it. */
const GREETING = /^pause: pid 1, uid 65532, waiting for SIGTERM or SIGINT$/m;
const MEMORY_LIMIT_BYTES = 32 * 1024 * 1024;

let plane: ControlPlane;
let cluster: NodeCluster;
let core: CoreV1Api;
let startedAt: number;

describe('the local node', { timeout: 600_000 }, () => {
  before(async () => {
    startedAt = Date.now();
    plane = await startControlPlane();
    cluster = await startNodeCluster(plane);
    console.log(`control plane, scheduler and node Ready in ${Date.now() - startedAt} ms`);
    core = plane.kubeConfig.makeApiClient(CoreV1Api);
  });

  after(async () => {
    await cluster?.stop();
    await plane?.stop();
    console.log(`whole test, stops included: ${Date.now() - startedAt} ms`);
  });

  test('the Node is Ready at an address of its own namespace, never one of the host', async () => {
    const node = await core.readNode({ name: cluster.node.name });
    assert.equal(node.status?.conditions?.find((c) => c.type === 'Ready')?.status, 'True');
    const internal = node.status?.addresses?.find((a) => a.type === 'InternalIP')?.address;
    assert.equal(internal, cluster.node.address);
    assert.match(internal ?? '', /^10\.244\.\d+\.2$/);
  });

  test("the kubelet has not changed the host's kernel settings", async () => {
    // The kubelet sets vm.overcommit_memory=1, kernel.panic=10, kernel.panic_on_oops=1... at start.
    assert.deepEqual(await readSysctls(), cluster.node.hostSysctls);
  });

  test('the kubelet refuses a client the cluster CA did not sign', async () => {
    const { stdout } = await execFileAsync('curl', [
      '-sk',
      '-o',
      '/dev/null',
      '-w',
      '%{http_code}',
      `https://${cluster.node.address}:10250/pods`,
    ]);
    assert.equal(stdout, '401');
  });

  describe('a Pod under the restricted profile', () => {
    before(async () => {
      await core.createNamespace({
        body: {
          metadata: { name: NAMESPACE, labels: { 'pod-security.kubernetes.io/enforce': 'restricted' } },
        },
      });
      // The controllers make it, and the ConfigMap its token volume mounts; admission needs the first.
      await eventually(() => core.readNamespacedServiceAccount({ name: 'default', namespace: NAMESPACE }), {
        timeoutMs: 60_000,
      });
      await core.createNamespacedPod({ namespace: NAMESPACE, body: restrictedPod() });
    });

    test('is scheduled onto the node and Running', async () => {
      const pod = await running(0);
      assert.equal(pod.spec?.nodeName, cluster.node.name);
      assert.ok(
        pod.status?.podIP?.startsWith(cluster.node.podSubnet.replace(/0\/24$/, '')),
        pod.status?.podIP,
      );
    });

    test('runs as the runtime was told: uid 65532, read-only root, no capabilities, seccomp, the memory limit', async () => {
      const spec = await containerSpec(await running(0));
      assert.equal(spec.process.user.uid, 65532);
      assert.equal(spec.root.readonly, true);
      assert.deepEqual(spec.process.capabilities.effective ?? [], []);
      assert.deepEqual(spec.process.capabilities.bounding ?? [], []);
      assert.equal(spec.process.noNewPrivileges, true);
      assert.equal(spec.linux.seccomp?.defaultAction, 'SCMP_ACT_ERRNO');
      assert.equal(spec.linux.resources.memory.limit, MEMORY_LIMIT_BYTES);
    });

    test('its log comes back through the apiserver and the kubelet (kubectl logs)', async () => {
      await running(0);
      const log = await eventually(async () => {
        const out = await kubectl('logs', '-n', NAMESPACE, POD);
        assert.match(out, GREETING);
        return out;
      });
      assert.match(log, GREETING);
    });

    test('a killed container is restarted by the kubelet', async () => {
      const before = await running(0);
      const id = containerId(before);
      await cluster.node.ctr(['tasks', 'kill', '--signal', 'SIGKILL', id]);
      const after = await running(1);
      assert.notEqual(containerId(after), id);
      const terminated = after.status?.containerStatuses?.[0]?.lastState?.terminated;
      assert.equal(terminated?.exitCode, 137);
      assert.match(await kubectl('logs', '-n', NAMESPACE, POD, '--previous'), GREETING);
    });
  });

  test('after the node stops, nothing of it is left on the host', async () => {
    const { name, hostSysctls } = cluster.node;
    await cluster.stop();
    assert.deepEqual(await readSysctls(), hostSysctls);
    const { stdout } = await execFileAsync('ip', ['-br', 'link']);
    assert.doesNotMatch(stdout, new RegExp(`^gpcnode${name.replace(/\D/g, '')}\\b`, 'm'));
    for (const hierarchy of await readdir('/sys/fs/cgroup')) {
      assert.ok(!(await readdir(`/sys/fs/cgroup/${hierarchy}`)).includes(name), `${hierarchy}/${name}`);
    }
  });
});

function restrictedPod(): V1Pod {
  return {
    metadata: { name: POD },
    spec: {
      securityContext: {
        runAsNonRoot: true,
        runAsUser: 65532,
        runAsGroup: 65532,
        seccompProfile: { type: 'RuntimeDefault' },
      },
      containers: [
        {
          name: 'pause',
          image: SANDBOX_IMAGE,
          imagePullPolicy: 'Never',
          securityContext: {
            allowPrivilegeEscalation: false,
            readOnlyRootFilesystem: true,
            capabilities: { drop: ['ALL'] },
          },
          resources: { limits: { memory: String(MEMORY_LIMIT_BYTES), cpu: '100m' } },
        },
      ],
    },
  };
}

/** The Pod once its container is Running after `restarts` restarts. */
function running(restarts: number): Promise<V1Pod> {
  return eventually(
    async () => {
      const pod = await core.readNamespacedPod({ name: POD, namespace: NAMESPACE });
      const status = pod.status?.containerStatuses?.[0];
      assert.equal(pod.status?.phase, 'Running', JSON.stringify(pod.status));
      assert.ok(status?.state?.running, JSON.stringify(status));
      assert.equal(status?.restartCount, restarts);
      return pod;
    },
    { timeoutMs: 60_000 },
  );
}

function containerId(pod: V1Pod): string {
  const id = pod.status?.containerStatuses?.[0]?.containerID ?? '';
  assert.match(id, /^containerd:\/\/[0-9a-f]{64}$/);
  return id.slice('containerd://'.length);
}

interface RuntimeSpec {
  process: {
    user: { uid: number };
    noNewPrivileges?: boolean;
    capabilities: { effective?: string[]; bounding?: string[] };
  };
  root: { readonly?: boolean };
  linux: { seccomp?: { defaultAction: string }; resources: { memory: { limit: number } } };
}

/** The OCI runtime spec containerd gave runc for the Pod's container. */
async function containerSpec(pod: V1Pod): Promise<RuntimeSpec> {
  const info = JSON.parse(await cluster.node.ctr(['containers', 'info', containerId(pod)])) as {
    Spec: RuntimeSpec;
  };
  return info.Spec;
}

async function kubectl(...args: string[]): Promise<string> {
  const { stdout } = await execFileAsync('/usr/bin/kubectl', ['--kubeconfig', plane.kubeconfigPath, ...args]);
  return stdout;
}
