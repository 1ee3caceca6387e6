import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { z } from 'zod';
import { GpuCloudClient } from '../../src/api/client.ts';
import type { KubeClient } from '../../src/kube/client.ts';
import { nodes, objectPath, pods } from '../../src/kube/resource-type.ts';
import { type IssuedCertificate, issueCertificate } from '../../src/lib/x509.ts';
import { EXTERNAL_ID } from '../../src/managed/core/annotations.ts';
import { grantClusterRole, writeKubeconfigAs } from '../support/impersonation.ts';
import {
  type ClientIdentity,
  freePorts,
  kubeletApiFiles,
  kubeletGet,
  type OwnedAddress,
  ownedAddress,
} from '../support/kubelet-api.ts';
import { type RunningOperator, resources, startOperator } from '../support/operator.ts';
import { poll, until } from '../support/until.ts';
import { createAccountKey, createDefaultServiceAccount, useTeamsStack } from '../support/virtual-node.ts';

// The virtual nodes' kubelet API on the real apiserver, which proxies `kubectl logs`, `kubectl exec` and
// the node's /stats and /metrics to the port each node names, as it does to a kubelet's, and the simulator
// over HTTP holding the cloud pods. Two nodes (two ProviderConfigs) each answer on a port of their own for
// their own Pods. The real kubectl reads the logs and the stats; straight to a port, requests without the
// apiserver's client certificate, or from a user the review refuses, are turned away.
const TEAM_KEY = 'team-a-kubelet-key';
const TEAM_B_KEY = 'team-b-kubelet-key';
const stack = useTeamsStack({ 'team-a': TEAM_KEY, 'team-b': TEAM_B_KEY });
const CONFIG = 'team-a';
const NODE = 'gpucloud-team-a';
const NS = 'team-a';
const CONFIG_B = 'team-b';
const NODE_B = 'gpucloud-team-b';
const NS_B = 'team-b';
/** The nodes' InternalIP: an address the test makes, as the node proxy refuses loopback. */
let owned: OwnedAddress | undefined;
const nodeAddress = () => owned?.address ?? '';
/** The ports the nodes' kubelet APIs are picked from. */
const RANGE_SIZE = 4;
const KEY_NS = 'gpucloud-system';
const TENANT = 'carol';
const KUBECTL = '/usr/bin/kubectl';
const execFileAsync = promisify(execFile);

let operator: RunningOperator;
let admin: KubeClient;
let cloud: GpuCloudClient;
/** The first of RANGE_SIZE free ports. */
let firstPort: number;
/** The port each node names, and serves on. */
let port: number;
let portB: number;
let dir: string;
/** The cloud pod's container lines, as the simulator wrote them when it started. */
let cloudLines: string[];
/** The cloud pod's id. */
let cloudId: string;
let apiserverClient: ClientIdentity;
let tlsFlags: readonly string[];
let caPem: string;

function podOn(name: string, annotations: Record<string, string>, node = NODE) {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, annotations },
    spec: {
      nodeName: node,
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

/** A request straight to a node's port (the first node's unless said). */
function straight(
  path: string,
  identity?: ClientIdentity | { token: string },
  to = port,
): Promise<{ status: number; body: string }> {
  return kubeletGet(nodeAddress(), to, path, caPem, identity);
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

const nodePortSchema = z.looseObject({
  metadata: z.looseObject({ annotations: z.record(z.string(), z.string()).optional() }),
  status: z
    .looseObject({
      daemonEndpoints: z.looseObject({ kubeletEndpoint: z.looseObject({ Port: z.number() }) }).optional(),
    })
    .optional(),
});

/** The port node `name` names for its kubelet API, and the one its annotation records; 0 for none. */
async function namedPorts(name: string): Promise<{ named: number; recorded: string | undefined }> {
  const node = await admin
    .request(nodePortSchema, { method: 'GET', path: objectPath(nodes, { namespace: '', name }) })
    .catch(() => undefined);
  return {
    named: node?.status?.daemonEndpoints?.kubeletEndpoint.Port ?? 0,
    recorded: node?.metadata.annotations?.['gpucloud.io/kubelet-port'],
  };
}

/** The port node `name` names for its kubelet API once it is registered (`wanted`, when given). */
async function portOfNode(name: string, wanted?: number): Promise<number> {
  const { named } = await poll(
    () => namedPorts(name),
    ({ named, recorded }) => named !== 0 && recorded === String(named) && (wanted ?? named) === named,
    `node ${name} naming its port, kept on the Node`,
    60_000,
  );
  return named;
}

const cpuSchema = z.object({
  time: z.string(),
  usageNanoCores: z.number(),
  usageCoreNanoSeconds: z.number(),
});
const memorySchema = z.object({ time: z.string(), workingSetBytes: z.number() });
const summarySchema = z.object({
  node: z.object({ nodeName: z.string(), startTime: z.string(), cpu: cpuSchema, memory: memorySchema }),
  pods: z.array(
    z.object({
      podRef: z.object({ name: z.string(), namespace: z.string(), uid: z.string() }),
      containers: z.array(z.object({ name: z.string(), cpu: cpuSchema.optional() })),
      cpu: cpuSchema.optional(),
      memory: memorySchema.optional(),
    }),
  ),
});
type Summary = z.output<typeof summarySchema>;

/** `kubectl get --raw /api/v1/nodes/<node>/proxy/stats/summary`, as the admin. */
async function summaryOf(node: string): Promise<Summary> {
  const run = await kubectl(['get', '--raw', `/api/v1/nodes/${node}/proxy/stats/summary`]);
  assert.equal(run.code, 0, run.stderr);
  return summarySchema.parse(JSON.parse(run.stdout));
}

const gpuPodMetricsSchema = z.looseObject({
  status: z
    .looseObject({
      metrics: z
        .looseObject({
          sampledAt: z.string().optional(),
          cpuUsage: z.number().optional(),
          memoryUsedBytes: z.number().optional(),
        })
        .optional(),
    })
    .optional(),
});

/** The latest sample the operator wrote on the GpuPod of Pod `name`. */
async function gpuPodMetrics(namespace: string, name: string) {
  const gpuPod = await admin.request(gpuPodMetricsSchema, {
    method: 'GET',
    path: objectPath(resources.gpuPod, { namespace, name }),
  });
  return gpuPod.status?.metrics;
}

/** The operator serving the nodes' kubelet APIs on ports of the range from `firstPort`. */
function startWithPorts(): Promise<RunningOperator> {
  return startOperator(stack.plane(), stack.sim(), {
    apiKey: 'operator-default-key',
    flags: [
      '--virtual-nodes',
      'true',
      '--virtual-node-address',
      nodeAddress(),
      '--virtual-node-ports',
      `${firstPort}-${firstPort + RANGE_SIZE - 1}`,
      ...tlsFlags,
    ],
  });
}

describe('the virtual nodes’ kubelet API', () => {
  before(async () => {
    owned = await ownedAddress();
    const cluster = stack.cluster();
    admin = cluster.client;
    for (const namespace of [KEY_NS, NS, NS_B]) await cluster.ensureNamespace(namespace);
    for (const [config, namespace, key] of [
      [CONFIG, NS, TEAM_KEY],
      [CONFIG_B, NS_B, TEAM_B_KEY],
    ] as const) {
      await createDefaultServiceAccount(admin, namespace);
      await createAccountKey(admin, KEY_NS, config, key);
      await cluster.create(resources.providerConfig, '', {
        apiVersion: 'gpucloud.io/v1alpha1',
        kind: 'ProviderConfig',
        metadata: { name: config },
        spec: {
          apiUrl: stack.sim().url,
          credentials: { secretRef: { namespace: KEY_NS, name: `${config}-key`, key: 'api-key' } },
          namespaces: { names: [namespace] },
          virtualNode: { enabled: true },
        },
      });
    }
    const files = await kubeletApiFiles(stack.plane(), [nodeAddress()]);
    tlsFlags = files.flags;
    caPem = files.caPem;
    apiserverClient = files.apiserverClient;
    dir = stack.plane().dataDir;
    firstPort = await freePorts(RANGE_SIZE);
    operator = await startWithPorts();
    port = await portOfNode(NODE);
    portB = await portOfNode(NODE_B);
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
    await cluster.create(pods, NS_B, podOn('worker', {}, NODE_B));
    // Served once the node is registered and its Pods watched.
    await until(
      async () => (await straight(`/containerLogs/${NS}/trainer/main`, apiserverClient)).status === 200,
      'the node serving',
    );
  });
  after(async () => {
    await operator?.stop();
    await cloud?.close();
    await owned?.release();
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

  test('each node names a port of its own from the range, and answers there for its own Pods only', async () => {
    assert.notEqual(port, portB);
    for (const each of [port, portB])
      assert.ok(each >= firstPort && each < firstPort + RANGE_SIZE, `${each} in the range`);
    const other = await straight(`/containerLogs/${NS_B}/worker/main`, apiserverClient, port);
    assert.equal(other.status, 404, other.body);
    assert.match(other.body, /pod "worker" does not exist/);
    const logs = await poll(
      () => kubectl(['logs', 'worker', '-n', NS_B]),
      (run) => run.code === 0 && run.stdout.includes('container started'),
      'the second node’s Pod logging through its own port',
      60_000,
    );
    assert.equal(logs.code, 0, logs.stderr);
  });

  test('kubectl get --raw .../proxy/stats/summary: each node its own running Pods, from their GpuPods’ metrics', async () => {
    const { singleCardVcpu, gpuCount } = await cloud.pods.get(cloudId);
    // The GpuPod's sample before and after the read: when both are one sample, the summary shows it.
    const seen = await poll(
      async () => {
        const before = await gpuPodMetrics(NS, 'trainer');
        const summary = await summaryOf(NODE);
        const after = await gpuPodMetrics(NS, 'trainer');
        return { before, summary, after };
      },
      ({ before, summary, after }) =>
        before?.cpuUsage !== undefined &&
        before.sampledAt === after?.sampledAt &&
        summary.pods.some((pod) => pod.podRef.name === 'trainer' && pod.cpu !== undefined),
      'a summary between two reads of one sample',
      60_000,
    );
    const { summary } = seen;
    const metrics = seen.before ?? {};
    assert.deepEqual(
      summary.pods.map((pod) => `${pod.podRef.namespace}/${pod.podRef.name}`),
      [`${NS}/trainer`],
      'the running Pod of this node only: not the one waiting, nor the other node’s',
    );
    const [trainer] = summary.pods;
    const nanoCores = Math.round((metrics.cpuUsage ?? Number.NaN) * singleCardVcpu * gpuCount * 1e9);
    assert.equal(trainer?.cpu?.usageNanoCores, nanoCores, 'the cloud’s ratio of the pod’s vCPUs');
    assert.equal(trainer?.memory?.workingSetBytes, metrics.memoryUsedBytes);
    assert.deepEqual(
      trainer?.containers.map((c) => c.name),
      ['main'],
    );
    assert.equal(trainer?.containers[0]?.cpu?.usageNanoCores, nanoCores);
    assert.equal(summary.node.nodeName, NODE);
    assert.equal(summary.node.cpu.usageNanoCores, nanoCores, 'the node: the sum of its Pods');
    assert.equal(summary.node.memory.workingSetBytes, metrics.memoryUsedBytes);
    assert.ok(Date.now() - Date.parse(summary.node.cpu.time) < 60_000, summary.node.cpu.time);
    // The CPU time only grows.
    const later = await poll(
      () => summaryOf(NODE),
      (next) => Date.parse(next.node.cpu.time) > Date.parse(summary.node.cpu.time),
      'a later summary',
    );
    const cpuTime = (of: Summary) =>
      of.pods.find((pod) => pod.podRef.name === 'trainer')?.cpu?.usageCoreNanoSeconds;
    assert.ok((cpuTime(later) ?? 0) > (cpuTime(summary) ?? 0), `${cpuTime(later)} > ${cpuTime(summary)}`);

    const second = await poll(
      () => summaryOf(NODE_B),
      (found) => found.pods.some((pod) => pod.cpu !== undefined),
      'the second node’s summary',
      60_000,
    );
    assert.equal(second.node.nodeName, NODE_B);
    assert.deepEqual(
      second.pods.map((pod) => `${pod.podRef.namespace}/${pod.podRef.name}`),
      [`${NS_B}/worker`],
    );
  });

  test('kubectl get --raw .../proxy/metrics/resource: the families metrics-server scrapes, for the node’s own Pods', async () => {
    const run = await kubectl(['get', '--raw', `/api/v1/nodes/${NODE}/proxy/metrics/resource`]);
    assert.equal(run.code, 0, run.stderr);
    const lines = run.stdout.split('\n');
    const sample = (name: string) => lines.find((line) => line.startsWith(name));
    const labels = `{container="main",namespace="${NS}",pod="trainer"}`;
    for (const name of [
      `container_cpu_usage_seconds_total${labels} `,
      `container_memory_working_set_bytes${labels} `,
      `container_start_time_seconds${labels} `,
      `pod_cpu_usage_seconds_total{namespace="${NS}",pod="trainer"} `,
      `pod_memory_working_set_bytes{namespace="${NS}",pod="trainer"} `,
      'node_cpu_usage_seconds_total ',
      'node_memory_working_set_bytes ',
    ]) {
      const line = sample(name);
      assert.ok(line, `${name}in ${run.stdout}`);
      const [, value, stamp] = line.split(' ');
      assert.ok(Number(value) > 0, line);
      assert.ok(Math.abs(Number(stamp) - Date.now()) < 60_000, `a time in ms: ${line}`);
    }
    assert.ok(lines.includes('scrape_error 0'));
    assert.doesNotMatch(run.stdout, /worker|starting/);
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
      assert.doesNotMatch(stats.body, /trainer/);
      const metrics = await straight('/metrics/resource', mallory, portB);
      assert.equal(metrics.status, 403, 'metrics ask nodes/metrics');
      assert.match(metrics.body, /user=mallory, verb=get, resource=nodes, subresource=metrics/);
      await grantClusterRole(admin, 'mallory', 'node-proxy', [
        { apiGroups: [''], resources: ['nodes/proxy'], verbs: ['get'] },
      ]);
      // A denial is remembered two seconds at most.
      const served = await poll(
        () => straight(`/containerLogs/${NS}/trainer/main`, mallory),
        (answer) => answer.status !== 403,
        'the grant applied',
      );
      assert.equal(served.status, 200);
      assert.deepEqual(served.body.trimEnd().split('\n'), await cloudLog());
    });

    test('a scraper granted nodes/stats and nodes/metrics (as metrics-server is) reads both nodes’ usage, and no log', async () => {
      await grantClusterRole(admin, 'scraper', 'node-usage-reader', [
        { apiGroups: [''], resources: ['nodes/stats', 'nodes/metrics'], verbs: ['get'] },
      ]);
      const scraper = await userCertificate('scraper');
      for (const [to, pod] of [
        [port, 'trainer'],
        [portB, 'worker'],
      ] as const) {
        // Once the grant applies, and the Pod's GpuPod has a sample.
        const summary = await poll(
          () => straight('/stats/summary', scraper, to),
          (answer) => answer.status !== 403 && answer.body.includes('usageNanoCores'),
          'the grant applied',
          60_000,
        );
        assert.equal(summary.status, 200, summary.body);
        assert.deepEqual(
          summarySchema.parse(JSON.parse(summary.body)).pods.map((p) => p.podRef.name),
          [pod],
        );
        const metrics = await straight('/metrics/resource', scraper, to);
        assert.equal(metrics.status, 200, metrics.body);
        assert.match(
          metrics.body,
          new RegExp(`^pod_cpu_usage_seconds_total\\{namespace="[^"]+",pod="${pod}"\\} `, 'm'),
        );
      }
      const logs = await straight(`/containerLogs/${NS}/trainer/main`, scraper);
      assert.equal(logs.status, 403);
      assert.match(logs.body, /subresource=proxy/);
    });

    test('a ServiceAccount’s bearer token, as metrics-server calls kubelets: reviewed, then authorised as it', async () => {
      const token = async (name: string) => {
        await admin.request(z.unknown(), {
          method: 'POST',
          path: `/api/v1/namespaces/${KEY_NS}/serviceaccounts`,
          body: { metadata: { name } },
        });
        const answer = await admin.request(z.object({ status: z.object({ token: z.string() }) }), {
          method: 'POST',
          path: `/api/v1/namespaces/${KEY_NS}/serviceaccounts/${name}/token`,
          body: {
            apiVersion: 'authentication.k8s.io/v1',
            kind: 'TokenRequest',
            spec: { expirationSeconds: 600 },
          },
        });
        return answer.status.token;
      };
      const metricsServer = await token('metrics-server');
      await admin.request(z.unknown(), {
        method: 'POST',
        path: '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings',
        body: {
          metadata: { name: 'metrics-server-node-usage' },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'node-usage-reader' },
          subjects: [{ kind: 'ServiceAccount', name: 'metrics-server', namespace: KEY_NS }],
        },
      });
      const served = await poll(
        () => straight('/metrics/resource', { token: metricsServer }),
        (answer) => answer.status !== 403,
        'the grant applied',
      );
      assert.equal(served.status, 200, served.body);
      assert.match(served.body, /^pod_memory_working_set_bytes\{namespace="team-a",pod="trainer"\} /m);

      const ungranted = await straight('/stats/summary', { token: await token('nosy') }, portB);
      assert.equal(ungranted.status, 403);
      assert.match(
        ungranted.body,
        new RegExp(`user=system:serviceaccount:${KEY_NS}:nosy, .*subresource=stats`),
      );
      for (const bad of ['not-a-token', `${metricsServer}x`]) {
        const refused = await straight('/stats/summary', { token: bad });
        assert.equal(refused.status, 401, refused.body);
        assert.match(refused.body, /the bearer token is not valid/);
        assert.doesNotMatch(refused.body, /trainer/);
      }
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
      for (const path of ['stats/summary', 'metrics/resource']) {
        const usage = await kubectl(['get', '--raw', `/api/v1/nodes/${NODE}/proxy/${path}`], config);
        assert.notEqual(usage.code, 0, path);
        assert.match(usage.stderr, /forbidden.*nodes\/proxy/i, path);
        assert.doesNotMatch(usage.stdout, /trainer/);
      }
    });
  });

  describe('its port', () => {
    test('kept on the Node: the next operator serves each node on the port its Node records', async () => {
      await operator.stop();
      const moved =
        [0, 1, 2, 3].map((i) => firstPort + i).find((each) => each !== port && each !== portB) ?? 0;
      await admin.request(z.unknown(), {
        method: 'PATCH',
        path: objectPath(nodes, { namespace: '', name: NODE }),
        body: { metadata: { annotations: { 'gpucloud.io/kubelet-port': String(moved) } } },
      });
      operator = await startWithPorts();
      await poll(
        () => portOfNode(NODE),
        (named) => named === moved,
        'the node naming its recorded port',
      );
      assert.equal(await portOfNode(NODE_B), portB, 'the other node keeps its own');
      const served = await poll(
        () => straight('/stats/summary', apiserverClient, moved).catch(() => ({ status: 0, body: '' })),
        (answer) => answer.status === 200,
        'the node served on its recorded port',
      );
      assert.equal(summarySchema.parse(JSON.parse(served.body)).node.nodeName, NODE);
      port = moved;
      const logs = await kubectl(['logs', 'trainer', '-n', NS]);
      assert.equal(logs.code, 0, logs.stderr);
    });

    test('closed when its node is deregistered', async () => {
      assert.equal((await straight('/stats/summary', apiserverClient, portB)).status, 200);
      await stack
        .cluster()
        .patch(resources.providerConfig, '', CONFIG_B, { spec: { virtualNode: { enabled: false } } });
      await until(
        () =>
          straight('/stats/summary', apiserverClient, portB).then(
            () => false,
            (error: NodeJS.ErrnoException) => error.code === 'ECONNREFUSED',
          ),
        'the port closed',
        60_000,
      );
      assert.equal(
        (await straight('/stats/summary', apiserverClient, port)).status,
        200,
        'the other node’s stays',
      );
    });
  });
});
