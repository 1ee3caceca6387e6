import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { z } from 'zod';
import { KubeApiError, KubeClient } from '../../src/kube/client.ts';
import { kubeconfigConnection } from '../../src/kube/kubeconfig.ts';
import { type LocalStack, startLocalStack } from '../../src/local/stack.ts';
import { TENANT_GROUP_VERSION } from '../../src/tenant-api/group.ts';
import { clientAs } from '../support/impersonation.ts';
import { captureLogs } from '../support/log-capture.ts';
import { poll } from '../support/until.ts';

// The stack as `npm run local` starts it, and docs/security.md's tenant steps on it as written: a user
// bound only to the built-in `view` reads its own pod's log through the tenant API, which needs
// kube-controller-manager's role aggregation, and is refused in another namespace, which it then deletes
// (the namespace controller). Also what the other controllers of a cluster do there.
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const execFileAsync = promisify(execFile);
let stack: LocalStack;
let workDir: string;
let admin: KubeClient;

/** The `kubectl` lines of the marked block in docs/security.md, each split into its arguments. */
async function documentedSteps(): Promise<string[][]> {
  const doc = await readFile(join(ROOT, 'docs', 'security.md'), 'utf8');
  const block = /<!-- tenant-steps:start -->\n```sh\n([\s\S]*?)```\n<!-- tenant-steps:end -->/.exec(doc)?.[1];
  assert.ok(block, 'docs/security.md has the marked block of tenant steps');
  const lines = block.split('\n').filter((line) => line.trim() !== '');
  assert.equal(
    lines[0],
    'export KUBECONFIG=.local/kubeconfig',
    'the steps start with what npm run local prints',
  );
  // Plain words only, so that splitting on spaces reads each line as a shell would.
  for (const line of lines.slice(1)) assert.match(line, /^kubectl( [\w./=:-]+)+$/);
  return lines.slice(1).map((line) => line.split(' ').slice(1));
}

async function kubectl(args: readonly string[]) {
  try {
    const { stdout, stderr } = await execFileAsync('/usr/bin/kubectl', args, {
      env: { PATH: process.env.PATH, KUBECONFIG: stack.kubeconfigPath, HOME: workDir },
      timeout: 120_000,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = z.object({ code: z.number(), stdout: z.string(), stderr: z.string() }).parse(error);
    return failed;
  }
}

async function statusOf(promise: Promise<unknown>): Promise<number> {
  try {
    await promise;
    return 200;
  } catch (error) {
    if (error instanceof KubeApiError) return error.status;
    throw error;
  }
}

const logPath = (namespace: string, name: string) =>
  `/apis/${TENANT_GROUP_VERSION}/namespaces/${namespace}/gpupods/${name}/log`;

describe('the local stack as `npm run local` starts it', () => {
  before(async () => {
    workDir = await mkdtemp(join(tmpdir(), 'gpucloud-local-stack-'));
    stack = await startLocalStack(captureLogs('warn').logger, { workDir });
    admin = new KubeClient(kubeconfigConnection(stack.kubeconfigPath));
  });
  after(async () => {
    await stack?.stop();
    if (workDir) await rm(workDir, { recursive: true, force: true });
  });

  test("docs/security.md's tenant steps work as written: view reads its own pod's log, 403 elsewhere", async () => {
    const steps = await documentedSteps();
    const results = [];
    for (const args of steps) results.push({ args, ...(await kubectl(args)) });
    const ownLog = results.find((r) => r.args.some((arg) => arg === logPath('default', 'jupyter')));
    const elsewhere = results.find((r) => r.args.some((arg) => arg === logPath('team-b', 'jupyter')));
    assert.ok(ownLog && elsewhere, 'the steps read the log in default and in team-b');
    assert.equal(ownLog.code, 0, ownLog.stderr);
    assert.match(ownLog.stdout, /^\d{4}-\d\d-\d\dT\S+ .*container started$/m);
    assert.equal(elsewhere.code, 1, elsewhere.stdout);
    assert.match(
      elsewhere.stderr,
      /Error from server \(Forbidden\): .*User "alice" cannot get resource "gpupods\/log" in API group "tenant.gpucloud.io" in the namespace "team-b"/,
    );
    for (const other of results.filter((r) => r !== elsewhere)) {
      assert.equal(other.code, 0, `kubectl ${other.args.join(' ')}: ${other.stderr}`);
    }
    // `kubectl delete namespace` waited for the namespace to go: the namespace controller finalised it.
    assert.equal(
      await statusOf(admin.request(z.unknown(), { method: 'GET', path: '/api/v1/namespaces/team-b' })),
      404,
    );
  });

  test("as the view user, impersonated: its pod's log and metrics; 403 in another namespace, existing or not; no submit", async () => {
    await admin.request(z.unknown(), {
      method: 'POST',
      path: '/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings',
      body: {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'RoleBinding',
        metadata: { name: 'bob-view' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'view' },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'bob' }],
      },
    });
    await admin.request(z.unknown(), {
      method: 'POST',
      path: '/api/v1/namespaces',
      body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'team-c' } },
    });
    const jupyter = await admin.request(z.looseObject({ spec: z.looseObject({}) }), {
      method: 'GET',
      path: '/apis/gpucloud.io/v1alpha1/namespaces/default/gpupods/jupyter',
    });
    await admin.request(z.unknown(), {
      method: 'POST',
      path: '/apis/gpucloud.io/v1alpha1/namespaces/team-c/gpupods',
      body: {
        apiVersion: 'gpucloud.io/v1alpha1',
        kind: 'GpuPod',
        metadata: { name: 'jupyter' },
        spec: jupyter.spec,
      },
    });
    const bob = clientAs({ connection: kubeconfigConnection(stack.kubeconfigPath) }, 'bob');
    const lines: string[] = [];
    for await (const line of bob.lines(logPath('default', 'jupyter'), {}, AbortSignal.timeout(30_000))) {
      if (line) lines.push(line);
    }
    assert.ok(
      lines.some((line) => line.endsWith('container started')),
      lines.join('\n'),
    );
    const get = (path: string) => statusOf(bob.request(z.unknown(), { method: 'GET', path }));
    const tenant = `/apis/${TENANT_GROUP_VERSION}/namespaces`;
    assert.equal(await get(`${tenant}/default/gpupods/jupyter/metrics`), 200);
    assert.equal(await get(`${tenant}/default/serverlessendpoints/sd-inference/tasks`), 200);
    assert.equal(await get(logPath('team-c', 'jupyter')), 403);
    assert.equal(await get(logPath('team-c', 'nobody')), 403);
    assert.equal(await get(`${tenant}/team-c/gpupods/jupyter/metrics`), 403);
    const submit = bob.request(z.unknown(), {
      method: 'POST',
      path: `${tenant}/default/serverlessendpoints/sd-inference/tasks`,
      body: { taskId: 'not_allowed', input: {} },
    });
    assert.equal(await statusOf(submit), 403);
  });

  test('garbage collection, the HPA and quotas work there as in a cluster', async () => {
    // An HPA whose minimum is above the endpoint's workers lifts them, with no metrics needed.
    await admin.request(z.unknown(), {
      method: 'POST',
      path: '/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers',
      body: {
        apiVersion: 'autoscaling/v2',
        kind: 'HorizontalPodAutoscaler',
        metadata: { name: 'sd-inference' },
        spec: {
          scaleTargetRef: {
            apiVersion: 'gpucloud.io/v1alpha1',
            kind: 'ServerlessEndpoint',
            name: 'sd-inference',
          },
          minReplicas: 3,
          maxReplicas: 4,
          metrics: [
            {
              type: 'Resource',
              resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 80 } },
            },
          ],
        },
      },
    });
    // A dependent goes with its owner.
    const configMaps = '/api/v1/namespaces/default/configmaps';
    const owner = await admin.request(z.object({ metadata: z.object({ uid: z.string() }) }), {
      method: 'POST',
      path: configMaps,
      body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'owner' } },
    });
    await admin.request(z.unknown(), {
      method: 'POST',
      path: configMaps,
      body: {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: {
          name: 'dependent',
          ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'owner', uid: owner.metadata.uid }],
        },
      },
    });
    await admin.request(z.unknown(), { method: 'DELETE', path: `${configMaps}/owner` });
    // A quota counts the namespace's GpuPods.
    await admin.request(z.unknown(), {
      method: 'POST',
      path: '/api/v1/namespaces/default/resourcequotas',
      body: {
        apiVersion: 'v1',
        kind: 'ResourceQuota',
        metadata: { name: 'gpupods' },
        spec: { hard: { 'count/gpupods.gpucloud.io': '10' } },
      },
    });
    await poll(
      () => statusOf(admin.request(z.unknown(), { method: 'GET', path: `${configMaps}/dependent` })),
      (code) => code === 404,
      'the dependent ConfigMap collected',
      30_000,
    );
    const quota = await poll(
      () =>
        admin.request(
          z.looseObject({ status: z.looseObject({ used: z.record(z.string(), z.string()).optional() }) }),
          {
            method: 'GET',
            path: '/api/v1/namespaces/default/resourcequotas/gpupods',
          },
        ),
      (found) => found.status.used !== undefined,
      'the quota usage',
      30_000,
    );
    const gpuPods = await admin.request(z.object({ items: z.array(z.unknown()) }), {
      method: 'GET',
      path: '/apis/gpucloud.io/v1alpha1/namespaces/default/gpupods',
    });
    assert.equal(quota.status.used?.['count/gpupods.gpucloud.io'], String(gpuPods.items.length));
    await poll(
      () =>
        admin.request(z.looseObject({ spec: z.looseObject({ workers: z.number().optional() }) }), {
          method: 'GET',
          path: '/apis/gpucloud.io/v1alpha1/namespaces/default/serverlessendpoints/sd-inference',
        }),
      (endpoint) => endpoint.spec.workers === 3,
      'the HPA to lift sd-inference to 3 workers',
      60_000,
    );
  });
});
