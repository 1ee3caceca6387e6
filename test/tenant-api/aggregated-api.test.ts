import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { delimiter, dirname, join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { GpuCloudClient } from '../../src/api/client.ts';
import { isStatus, type KubeClient } from '../../src/kube/client.ts';
import { TENANT_GROUP_VERSION } from '../../src/tenant-api/group.ts';
import { clientAs } from '../support/impersonation.ts';
import { API_KEY, manifests, resources, useStack } from '../support/operator.ts';
import { poll } from '../support/until.ts';
import {
  direct,
  openFollows,
  serviceAccountKubeconfig,
  type TenantWorld,
  useTenantWorld,
} from './support.ts';

// The tenant API through the real apiserver: the aggregator authenticates the user, proxies with its
// front-proxy certificate, and the operator authorises each request with a SubjectAccessReview. Tenants
// hold only the built-in `view` or `edit` role in their namespace (the operator's ClusterRoles aggregate
// into them through kube-controller-manager's clusterrole-aggregation controller).
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const TEAM = 'team-a';
const OTHER = 'team-b';
const stack = useStack({ transitionMs: 50 });
let world: TenantWorld;
/** The cloud id of the world's `index`th resource. */
const idOf = (index: number) => String(world.ready()[index]?.status?.id);

const api = (namespace: string, plural: string, name: string, sub: string) =>
  `/apis/${TENANT_GROUP_VERSION}/namespaces/${namespace}/${plural}/${name}/${sub}`;

async function readLines(
  client: KubeClient,
  path: string,
  query: Record<string, string | number | boolean> = {},
) {
  const lines: string[] = [];
  for await (const line of client.lines(path, query, AbortSignal.timeout(30_000))) if (line) lines.push(line);
  return lines;
}

async function statusOf(promise: Promise<unknown>): Promise<number> {
  try {
    await promise;
    return 200;
  } catch (error) {
    if (error instanceof Error && 'status' in error && typeof error.status === 'number') return error.status;
    throw error;
  }
}

/** Straight to the operator's port, with or without the front proxy's pair. */
function straight(path: string, identity?: { user: string }) {
  return direct(stack.plane(), world.setup(), { path, ...(identity ? { identity } : {}) });
}

describe('the tenant API through the apiserver', () => {
  world = useTenantWorld(stack, {
    flags: ['--tenant-api-streams-per-user', '2'],
    bindings: [
      [TEAM, 'view', 'viewer'],
      [TEAM, 'edit', 'editor'],
    ],
    objects: [
      { resource: resources.gpuPod, namespace: TEAM, manifest: manifests.gpuPod('trainer') },
      {
        resource: resources.serverlessEndpoint,
        namespace: TEAM,
        manifest: manifests.serverlessEndpoint('queue'),
      },
      { resource: resources.gpuPod, namespace: OTHER, manifest: manifests.gpuPod('theirs') },
    ],
    served: async (plane) =>
      (await statusOf(
        clientAs(plane, 'viewer').request(z.unknown(), {
          method: 'GET',
          path: api(TEAM, 'gpupods', 'trainer', 'metrics'),
        }),
      )) === 200,
  });

  test('discovery: the aggregator serves the group, so kubectl get --raw works', async () => {
    const list = await stack.cluster().client.request(
      z.object({
        groupVersion: z.string(),
        resources: z.array(z.object({ name: z.string(), verbs: z.array(z.string()) })),
      }),
      { method: 'GET', path: `/apis/${TENANT_GROUP_VERSION}` },
    );
    assert.equal(list.groupVersion, TENANT_GROUP_VERSION);
    assert.deepEqual(
      list.resources.map((r) => `${r.name}:${r.verbs.join(',')}`),
      ['gpupods/log:get', 'gpupods/metrics:get', 'serverlessendpoints/tasks:get,create'],
    );
  });

  test('a viewer reads its pod logs and metrics and lists its endpoint tasks', async () => {
    const viewer = clientAs(stack.plane(), 'viewer');
    const lines = await readLines(viewer, api(TEAM, 'gpupods', 'trainer', 'log'));
    assert.ok(
      lines.some((line) => line.endsWith('container started')),
      lines.join('\n'),
    );
    assert.match(lines[0] ?? '', /^\d{4}-\d\d-\d\dT\S+ /);
    const limited = await readLines(viewer, api(TEAM, 'gpupods', 'trainer', 'log'), { limit: 1 });
    assert.deepEqual(limited, lines.slice(0, 1));
    const matching = await readLines(viewer, api(TEAM, 'gpupods', 'trainer', 'log'), { keyword: 'image' });
    assert.deepEqual(
      matching,
      lines.filter((line) => line.includes('image')),
    );
    assert.ok(matching.length > 0 && matching.length < lines.length);

    const metrics = await viewer.request(
      z.object({
        kind: z.string(),
        metadata: z.object({ name: z.string() }),
        series: z.array(z.object({ metric_name: z.string() })),
      }),
      { method: 'GET', path: api(TEAM, 'gpupods', 'trainer', 'metrics'), query: { window: '10m' } },
    );
    assert.equal(metrics.kind, 'GpuPodMetrics');
    assert.equal(metrics.metadata.name, 'trainer');
    assert.deepEqual(
      metrics.series.map((s) => s.metric_name),
      ['cpu_usage', 'gpu_utilization', 'memory_usage', 'gpu_memory'],
    );

    const tasks = await viewer.request(z.object({ kind: z.string(), items: z.array(z.unknown()) }), {
      method: 'GET',
      path: api(TEAM, 'serverlessendpoints', 'queue', 'tasks'),
    });
    assert.equal(tasks.kind, 'ServerlessTaskList');
  });

  test('an editor submits a task exactly once per task id; a viewer may not submit', async () => {
    const path = api(TEAM, 'serverlessendpoints', 'queue', 'tasks');
    const body = { taskId: 'render_once', input: { prompt: 'a lighthouse' } };
    const viewer = clientAs(stack.plane(), 'viewer');
    assert.equal(await statusOf(viewer.request(z.unknown(), { method: 'POST', path, body })), 403);
    const editor = clientAs(stack.plane(), 'editor');
    const created = await editor.request(z.object({ taskId: z.string() }), { method: 'POST', path, body });
    assert.equal(created.taskId, 'render_once');
    assert.equal(await statusOf(editor.request(z.unknown(), { method: 'POST', path, body })), 409);
    // Bad input is a 400 that names the field, and sends nothing to the cloud.
    const bad = await editor
      .request(z.unknown(), { method: 'POST', path, body: { taskId: 'not-an-id', input: {} } })
      .catch((error: unknown) => error);
    assert.ok(isStatus(bad, 400));
    assert.match(bad.message, /taskId: taskId may contain only/);
    const cloud = new GpuCloudClient({ baseUrl: stack.sim().url, apiKey: API_KEY });
    try {
      const all = [];
      for await (const task of cloud.serverless.tasks.listAll(idOf(1))) all.push(task.taskId);
      assert.deepEqual(
        all.filter((id) => id === 'render_once'),
        ['render_once'],
      );
    } finally {
      await cloud.close();
    }
    const task = await viewer.request(z.object({ taskId: z.string(), status: z.string() }), {
      method: 'GET',
      path: `${path}/render_once`,
    });
    assert.equal(task.taskId, 'render_once');
    assert.equal(
      await statusOf(viewer.request(z.unknown(), { method: 'GET', path: `${path}/never_sent` })),
      404,
    );
  });

  test('403 for any resource of another namespace, existing or not; 404 for a missing one of its own', async () => {
    const viewer = clientAs(stack.plane(), 'viewer');
    const get = (path: string) => statusOf(viewer.request(z.unknown(), { method: 'GET', path }));
    assert.equal(await get(api(OTHER, 'gpupods', 'theirs', 'metrics')), 403);
    assert.equal(await get(api(OTHER, 'gpupods', 'nobody', 'metrics')), 403);
    assert.equal(await get(api(OTHER, 'serverlessendpoints', 'queue', 'tasks')), 403);
    assert.equal(await get(api(TEAM, 'gpupods', 'missing', 'metrics')), 404);
    assert.equal(await get(`${api(TEAM, 'gpupods', 'trainer', 'metrics')}?window=1y`), 400);
    assert.equal(await get(`${api(TEAM, 'gpupods', 'trainer', 'metrics')}?window=4h&step=30s`), 400);
    assert.equal(await get(`${api(TEAM, 'gpupods', 'trainer', 'log')}?limit=0`), 400);
    const error = await viewer
      .request(z.unknown(), { method: 'GET', path: api(TEAM, 'gpupods', 'missing', 'metrics') })
      .catch((e: unknown) => e);
    assert.ok(isStatus(error, 404));
    assert.match(error.message, /gpupods.gpucloud.io "missing" not found/);
  });

  test('straight to the operator: 401 without the front-proxy certificate, 403 from its own review', async () => {
    const path = api(TEAM, 'gpupods', 'trainer', 'metrics');
    const anonymous = await straight(path);
    assert.equal(anonymous.code, 401, anonymous.body);
    assert.match(anonymous.body, /request-header CA/);
    // The certificate alone is not a grant: the operator asks the apiserver about the user it names.
    const stranger = await straight(path, { user: 'stranger' });
    assert.equal(stranger.code, 403, stranger.body);
    assert.match(stranger.body, /User \\"stranger\\" cannot get resource \\"gpupods\/metrics\\"/);
    const viewer = await straight(path, { user: 'viewer' });
    assert.equal(viewer.code, 200, viewer.body);
  });

  test('a followed log streams lines as the cloud writes them, ends when the reader goes, and is bounded per user', async () => {
    const viewer = clientAs(stack.plane(), 'viewer');
    const path = api(TEAM, 'gpupods', 'trainer', 'log');
    const stop = new AbortController();
    const seen: string[] = [];
    const following = (async () => {
      try {
        for await (const line of viewer.lines(path, { follow: true }, stop.signal)) if (line) seen.push(line);
      } catch (error) {
        if (!stop.signal.aborted) throw error;
      }
    })();
    await poll(
      async () => seen.length,
      (n) => n >= 3,
      'the log so far',
      20_000,
    );
    const before = seen.length;
    // Two follows is the most one user may hold: a third is refused, a second is fine.
    const second = new AbortController();
    const secondOpen = viewer.lines(path, { follow: true }, second.signal);
    const secondFirst = secondOpen.next();
    await poll(
      () => streamsOpen(),
      (n) => n === 2,
      'two streams open',
      20_000,
    );
    assert.equal(await statusOf(readLines(viewer, path, { follow: true })), 429);
    second.abort();
    await secondFirst.catch(() => undefined);

    // The container restarts: the simulator writes its start lines again, and they arrive.
    const cloud = new GpuCloudClient({ baseUrl: stack.sim().url, apiKey: API_KEY });
    try {
      await cloud.pods.pause(idOf(0));
      await poll(
        async () => (await cloud.pods.get(idOf(0))).status,
        (s) => s === 'PAUSED',
        'PAUSED',
      );
      await cloud.pods.resume(idOf(0)).catch(() => undefined);
    } finally {
      await cloud.close();
    }
    await poll(
      async () => seen.length,
      (n) => n >= before + 3,
      'the lines of the restart',
      20_000,
    );
    assert.ok(seen.slice(before).some((line) => line.endsWith('container started')));
    stop.abort();
    await following;
    await poll(
      () => streamsOpen(),
      (n) => n === 0,
      'every stream closed',
      20_000,
    );
  });

  test('kubectl gpucloud logs --follow as a tenant streams through the apiserver and stops cleanly on Ctrl-C', async () => {
    const kubeconfig = await serviceAccountKubeconfig(stack.plane(), stack.cluster().client, TEAM, 'viewer');
    const child = execFile(
      '/usr/bin/kubectl',
      ['gpucloud', 'logs', 'gpupod/trainer', '-n', TEAM, '--follow', '-v'],
      {
        env: {
          PATH: [join(ROOT, 'bin'), dirname(process.execPath), process.env.PATH].join(delimiter),
          KUBECONFIG: kubeconfig,
          HOME: stack.plane().dataDir,
        },
      },
    );
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (chunk) => (stdout += chunk));
    child.stderr?.on('data', (chunk) => (stderr += chunk));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    await poll(
      async () => `${stdout}\n${stderr}`,
      (text) => text.includes('container started'),
      "the tenant's log lines",
      30_000,
    );
    await poll(
      () => streamsOpen(),
      (n) => n === 1,
      'the CLI stream open',
      20_000,
    );
    assert.match(stderr, /through the Kubernetes API as your kubeconfig identity/);
    // kubectl passes Ctrl-C to its plugin's process group; the plugin itself is what must stop cleanly.
    child.kill('SIGINT');
    assert.equal(await exited, 0, stderr);
    await poll(
      () => streamsOpen(),
      (n) => n === 0,
      'the stream closed on the operator',
      20_000,
    );
  });
});

const streamsOpen = () => openFollows(world.operator());
