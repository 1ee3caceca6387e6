import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { request as httpsRequest } from 'node:https';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { z } from 'zod';
import { GpuCloudClient } from '../../src/api/client.ts';
import type { KubeClient } from '../../src/kube/client.ts';
import { objectPath, pods } from '../../src/kube/resource-type.ts';
import { type IssuedCertificate, issueCertificate } from '../../src/lib/x509.ts';
import { EXTERNAL_ID } from '../../src/managed/core/annotations.ts';
import { writeKubeconfigAs } from '../support/impersonation.ts';
import { type RunningOperator, resources, startOperator, useStack } from '../support/operator.ts';
import { poll, until } from '../support/until.ts';

// The virtual node's kubelet API on the real apiserver, which proxies `kubectl logs` and `kubectl exec` to
// the operator's port as it does to a kubelet's, and the simulator over HTTP holding the cloud pod. The
// real kubectl reads the logs; straight to the port, requests without the apiserver's client certificate,
// or from a user the review refuses, are turned away.
const TEAM_KEY = 'team-a-kubelet-key';
const stack = useStack({
  apiKeys: [
    { key: 'operator-default-key', org: 'ops' },
    { key: TEAM_KEY, org: 'team-a' },
  ],
});
const CONFIG = 'team-a';
const NODE = 'gpucloud-team-a';
const NS = 'team-a';
const KEY_NS = 'gpucloud-system';
const TENANT = 'carol';
const KUBECTL = '/usr/bin/kubectl';
const execFileAsync = promisify(execFile);

let operator: RunningOperator;
let admin: KubeClient;
let cloud: GpuCloudClient;
let port: number;
let dir: string;
/** The cloud pod's container lines, as the simulator wrote them when it started. */
let cloudLines: string[];
/** The cloud pod's id. */
let cloudId: string;
let apiserverClient: { certPem: string; keyPem: string };
let caPem: string;

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port: free } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return free;
}

function podOn(name: string, annotations: Record<string, string>) {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, annotations },
    spec: {
      nodeName: NODE,
      tolerations: [{ key: 'gpucloud.io/virtual-node', operator: 'Exists', effect: 'NoSchedule' }],
      containers: [
        { name: 'main', image: 'example/app:1', resources: { limits: { 'nvidia.com/gpu': '1' } } },
      ],
    },
  };
}

/** kubectl as the admin, or as `kubeconfig`'s user: its exit code, output and errors. */
async function kubectl(args: readonly string[], kubeconfig = stack.plane().kubeconfigPath) {
  try {
    const { stdout, stderr } = await execFileAsync(KUBECTL, ['--kubeconfig', kubeconfig, ...args]);
    return { code: 0, stdout, stderr };
  } catch (error) {
    const exit = error as { code?: number; stdout?: string; stderr?: string };
    return { code: exit.code ?? -1, stdout: exit.stdout ?? '', stderr: exit.stderr ?? '' };
  }
}

/** A request straight to the operator's port, with `identity`'s client certificate or none. */
function straight(
  path: string,
  identity?: { certPem: string; keyPem: string },
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const request = httpsRequest(
      {
        host: '127.0.0.1',
        port,
        path,
        ca: caPem,
        ...(identity ? { cert: identity.certPem, key: identity.keyPem } : {}),
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () =>
          resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString() }),
        );
      },
    );
    request.on('error', reject);
    request.end();
  });
}

/** The cloud pod's container lines now, as the cloud gives them. */
async function cloudLog(): Promise<string[]> {
  return (await cloud.pods.logs(cloudId, { limit: 1000 })).items.map((line) => line.content);
}

async function clusterCa() {
  const { layout } = stack.plane();
  return {
    certPem: await readFile(layout.clusterCa, 'utf8'),
    keyPem: await readFile(layout.clusterCaKey, 'utf8'),
  };
}

/** A client certificate of the cluster CA for `user`: who the kubelet API takes it to be. */
async function userCertificate(user: string): Promise<IssuedCertificate> {
  return issueCertificate(await clusterCa(), { commonName: user, usage: 'client', days: 1 });
}

describe('the virtual node’s kubelet API', () => {
  before(async () => {
    const cluster = stack.cluster();
    admin = cluster.client;
    for (const namespace of [KEY_NS, NS]) await cluster.ensureNamespace(namespace);
    await admin.request(z.unknown(), {
      method: 'POST',
      path: `/api/v1/namespaces/${NS}/serviceaccounts`,
      body: { metadata: { name: 'default' } },
    });
    await cluster.create(resources.secret, KEY_NS, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'team-a-key' },
      stringData: { 'api-key': TEAM_KEY },
    });
    await cluster.create(resources.providerConfig, '', {
      apiVersion: 'gpucloud.io/v1alpha1',
      kind: 'ProviderConfig',
      metadata: { name: CONFIG },
      spec: {
        apiUrl: stack.sim().url,
        credentials: { secretRef: { namespace: KEY_NS, name: 'team-a-key', key: 'api-key' } },
        namespaces: { names: [NS] },
        virtualNode: { enabled: true },
      },
    });
    // The serving pair the apiserver trusts (--kubelet-certificate-authority is the cluster CA) for the
    // node's InternalIP, as a real cluster's operator gets it in a Secret; the client CA is the cluster CA,
    // which signs the apiserver's --kubelet-client-certificate.
    const { layout } = stack.plane();
    dir = stack.plane().dataDir;
    const serving = issueCertificate(await clusterCa(), {
      commonName: 'gpucloud-virtual-nodes',
      ipAddresses: ['127.0.0.1'],
      usage: 'server',
      days: 1,
    });
    await writeFile(join(dir, 'vnode.crt'), serving.certPem, { mode: 0o600 });
    await writeFile(join(dir, 'vnode.key'), serving.keyPem, { mode: 0o600 });
    caPem = await readFile(layout.clusterCa, 'utf8');
    apiserverClient = {
      certPem: await readFile(layout.kubeletClientCert, 'utf8'),
      keyPem: await readFile(layout.kubeletClientKey, 'utf8'),
    };
    port = await freePort();
    operator = await startOperator(stack.plane(), stack.sim(), {
      apiKey: 'operator-default-key',
      flags: [
        '--virtual-nodes',
        'true',
        '--virtual-node-port',
        String(port),
        '--virtual-node-tls-cert-file',
        join(dir, 'vnode.crt'),
        '--virtual-node-tls-key-file',
        join(dir, 'vnode.key'),
        '--virtual-node-client-ca-file',
        layout.clusterCa,
      ],
    });
    // The Pod runs as a cloud pod of the node's account, which its annotation names once it is made.
    cloud = new GpuCloudClient({ baseUrl: stack.sim().url, apiKey: TEAM_KEY });
    await cluster.create(pods, NS, podOn('trainer', {}));
    const annotated = z.looseObject({
      metadata: z.looseObject({ annotations: z.record(z.string(), z.string()).optional() }),
    });
    const named = await poll(
      () =>
        admin.request(annotated, {
          method: 'GET',
          path: objectPath(pods, { namespace: NS, name: 'trainer' }),
        }),
      (pod) => pod.metadata.annotations?.[EXTERNAL_ID] !== undefined,
      'the Pod naming its cloud pod',
    );
    const id = named.metadata.annotations?.[EXTERNAL_ID] ?? '';
    await poll(
      () => cloud.pods.get(id),
      (pod) => pod.status === 'RUNNING',
      'the cloud pod RUNNING',
    );
    cloudId = id;
    cloudLines = (await cloud.pods.logs(id)).items.map((line) => line.content);
    assert.ok(cloudLines.length >= 3, `the simulator wrote the container's start: ${cloudLines}`);
    // A Pod whose env names a ConfigMap that does not exist waits, with no cloud pod made.
    const starting = podOn('starting', {});
    const [container] = starting.spec.containers;
    await cluster.create(pods, NS, {
      ...starting,
      spec: {
        ...starting.spec,
        containers: [
          {
            ...container,
            env: [{ name: 'MODEL', valueFrom: { configMapKeyRef: { name: 'missing', key: 'model' } } }],
          },
        ],
      },
    });
    // Served once the node is registered and its Pods watched.
    await until(
      async () => (await straight(`/containerLogs/${NS}/trainer/main`, apiserverClient)).status === 200,
      'the node serving',
    );
  });
  after(async () => {
    await operator?.stop();
    await cloud?.close();
  });

  test('kubectl logs reads the cloud pod’s log through the apiserver, as a kubelet’s', async () => {
    const plain = await kubectl(['logs', 'trainer', '-n', NS]);
    assert.equal(plain.code, 0, plain.stderr);
    assert.deepEqual(plain.stdout.trimEnd().split('\n'), cloudLines);

    const stamped = await kubectl(['logs', 'trainer', '-n', NS, '--timestamps']);
    const lines = stamped.stdout.trimEnd().split('\n');
    assert.deepEqual(
      lines.map((line) => line.slice(line.indexOf(' ') + 1)),
      cloudLines,
    );
    for (const line of lines)
      assert.ok(!Number.isNaN(Date.parse(line.split(' ')[0] ?? '')), `a time first: ${line}`);

    const tail = await kubectl(['logs', 'trainer', '-n', NS, '--tail=2']);
    assert.deepEqual(tail.stdout.trimEnd().split('\n'), cloudLines.slice(-2));

    const since = await kubectl(['logs', 'trainer', '-n', NS, '--since=1h']);
    assert.deepEqual(since.stdout.trimEnd().split('\n'), cloudLines);
    const future = new Date(Date.now() + 3_600_000).toISOString().replace(/\.\d+Z$/, 'Z');
    const none = await kubectl(['logs', 'trainer', '-n', NS, `--since-time=${future}`]);
    assert.equal(none.code, 0, none.stderr);
    assert.equal(none.stdout, '', 'no line is later than an hour from now');

    const limited = await kubectl(['logs', 'trainer', '-n', NS, '--limit-bytes=10']);
    assert.equal(limited.stdout, `${cloudLines.join('\n')}\n`.slice(0, 10));
  });

  test('kubectl logs -f streams the lines the cloud pod writes after it started', async () => {
    const follow = spawn(KUBECTL, [
      '--kubeconfig',
      stack.plane().kubeconfigPath,
      'logs',
      '-f',
      'trainer',
      '-n',
      NS,
    ]);
    let out = '';
    follow.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
    });
    try {
      await until(() => out.includes('container started'), 'the log so far');
      const id = cloudId;
      // Paused and resumed, the cloud pod starts its container again, and writes its start again.
      await cloud.pods.pause(id);
      // Resumable once PAUSED: tried until it runs again (the operator, whose GpuPod is not paused,
      // may resume it first).
      await until(async () => {
        await cloud.pods.resume(id).catch(() => undefined);
        return (await cloud.pods.get(id)).status === 'RUNNING';
      }, 'the cloud pod resumed');
      await until(() => out.split('container started').length > 2, 'the restart streamed', 60_000);
      assert.equal(follow.exitCode, null, 'still following');
    } finally {
      follow.kill();
    }
  });

  test('a Pod whose cloud pod is not made yet answers as a container waiting to start, not a failure', async () => {
    const waiting = await kubectl(['logs', 'starting', '-n', NS]);
    assert.notEqual(waiting.code, 0);
    assert.match(
      waiting.stderr,
      /Error from server \(BadRequest\): container "main" in pod "starting" is waiting to start: ContainerCreating/,
    );
  });

  test('kubectl exec is refused clearly, naming the CLI’s ssh', async () => {
    const exec = await kubectl(['exec', 'trainer', '-n', NS, '--', 'true']);
    assert.notEqual(exec.code, 0);
    assert.match(
      exec.stderr,
      /exec is not supported on gpucloud nodes.*kubectl gpucloud ssh team-a\/trainer/,
    );
  });

  test('a bad parameter is a 400 that names it', async () => {
    for (const [query, name] of [
      ['tailLines=-1', 'tailLines'],
      ['follow=maybe', 'follow'],
      ['sinceTime=yesterday', 'sinceTime'],
      ['limitBytes=0', 'limitBytes'],
      ['sinceSeconds=10&sinceTime=2026-01-01T00:00:00Z', 'sinceTime'],
      ['colour=red', 'colour'],
    ]) {
      const answer = await straight(`/containerLogs/${NS}/trainer/main?${query}`, apiserverClient);
      assert.equal(answer.status, 400, `${query}: ${answer.body}`);
      assert.match(answer.body, new RegExp(name ?? '-'), query);
    }
  });

  describe('who may read it', () => {
    test('straight to the port without a client certificate: 401', async () => {
      const answer = await straight(`/containerLogs/${NS}/trainer/main`);
      assert.equal(answer.status, 401);
      assert.doesNotMatch(answer.body, new RegExp(cloudLines.at(-1) ?? '-'));
    });

    test('a user of the cluster CA without nodes/proxy: 403 by the review; granted it, served', async () => {
      const mallory = await userCertificate('mallory');
      const refused = await straight(`/containerLogs/${NS}/trainer/main`, mallory);
      assert.equal(refused.status, 403);
      assert.match(refused.body, /user=mallory, verb=get, resource=nodes, subresource=proxy/);
      const stats = await straight('/stats/summary', mallory);
      assert.equal(stats.status, 403, 'stats ask nodes/stats, which mallory lacks too');
      assert.match(stats.body, /subresource=stats/);
      await admin.request(z.unknown(), {
        method: 'POST',
        path: '/apis/rbac.authorization.k8s.io/v1/clusterroles',
        body: {
          metadata: { name: 'node-proxy' },
          rules: [{ apiGroups: [''], resources: ['nodes/proxy'], verbs: ['get'] }],
        },
      });
      await admin.request(z.unknown(), {
        method: 'POST',
        path: '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings',
        body: {
          metadata: { name: 'mallory-node-proxy' },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'node-proxy' },
          subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'mallory' }],
        },
      });
      // A denial is remembered two seconds at most.
      const served = await poll(
        () => straight(`/containerLogs/${NS}/trainer/main`, mallory),
        (answer) => answer.status !== 403,
        'the grant applied',
      );
      assert.equal(served.status, 200);
      assert.deepEqual(served.body.trimEnd().split('\n'), await cloudLog());
    });

    test('a tenant with pods/log reads its Pod’s log, but not the node’s kubelet API through the apiserver', async () => {
      // What `view` grants of Pods (no controller-manager here aggregates `view` itself).
      await admin.request(z.unknown(), {
        method: 'POST',
        path: `/apis/rbac.authorization.k8s.io/v1/namespaces/${NS}/roles`,
        body: {
          metadata: { name: 'pod-reader' },
          rules: [{ apiGroups: [''], resources: ['pods', 'pods/log'], verbs: ['get', 'list', 'watch'] }],
        },
      });
      await admin.request(z.unknown(), {
        method: 'POST',
        path: `/apis/rbac.authorization.k8s.io/v1/namespaces/${NS}/rolebindings`,
        body: {
          metadata: { name: `${TENANT}-pod-reader` },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'pod-reader' },
          subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: TENANT }],
        },
      });
      const config = await writeKubeconfigAs(stack.plane(), TENANT, join(dir, `${TENANT}.kubeconfig`));
      // The binding applies once the apiserver's RBAC cache has it.
      const own = await poll(
        () => kubectl(['logs', 'trainer', '-n', NS], config),
        (run) => run.code === 0,
        'the tenant’s grant applied',
      );
      assert.deepEqual(own.stdout.trimEnd().split('\n'), await cloudLog());
      const proxied = await kubectl(
        ['get', '--raw', `/api/v1/nodes/${NODE}/proxy/containerLogs/${NS}/trainer/main`],
        config,
      );
      assert.notEqual(proxied.code, 0);
      assert.match(proxied.stderr, /Forbidden|forbidden/);
      assert.match(proxied.stderr, /nodes\/proxy/);
    });
  });
});
