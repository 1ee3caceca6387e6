import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { delimiter, dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { z } from 'zod';
import { GpuCloudClient } from '../../src/api/client.ts';
import { TENANT_GROUP_VERSION } from '../../src/tenant-api/group.ts';
import { tenantSchemas } from '../../src/tenant-api/openapi.ts';
import { clientAs } from '../support/impersonation.ts';
import {
  API_KEY,
  isReady,
  manifests,
  type RunningOperator,
  resources,
  startOperator,
  useStack,
} from '../support/operator.ts';
import { poll } from '../support/until.ts';
import { bindRole, serviceAccountKubeconfig, tenantApiSetup } from './support.ts';

// The group's OpenAPI documents as clients read them, from the apiserver (which merges /openapi/v2 and
// lists and proxies /openapi/v3), and the answers of the API against the schemas those documents carry.
// Also the endpoint's task counts, for a tenant and for its CLI.
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const TEAM = 'team-a';
const GROUP_PATH = `apis/${TENANT_GROUP_VERSION}`;
const stack = useStack({ transitionMs: 50 });
let operator: RunningOperator;

const api = (plural: string, name: string, sub: string) =>
  `/apis/${TENANT_GROUP_VERSION}/namespaces/${TEAM}/${plural}/${name}/${sub}`;

const v3Index = z.object({ paths: z.record(z.string(), z.object({ serverRelativeURL: z.string() })) });
const v3Document = z.looseObject({
  openapi: z.string(),
  paths: z.record(z.string(), z.record(z.string(), z.unknown())),
  components: z.object({ schemas: z.record(z.string(), z.looseObject({})) }),
});
const getParameters = z.looseObject({
  get: z.looseObject({ parameters: z.array(z.looseObject({ name: z.string(), in: z.string() })) }).optional(),
});

describe("the tenant API's OpenAPI documents, and task counts", () => {
  before(async () => {
    const plane = stack.plane();
    const cluster = stack.cluster();
    await cluster.ensureNamespace(TEAM);
    const setup = await tenantApiSetup(plane);
    operator = await startOperator(plane, stack.sim(), { flags: setup.flags });
    await setup.register(cluster.client);
    // The tenant ClusterRole itself, bound in the namespace: no aggregation needed here.
    await bindRole(cluster.client, TEAM, 'gpucloud-operator-tenant-view', 'viewer');
    await cluster.create(resources.gpuPod, TEAM, manifests.gpuPod('trainer'));
    await cluster.create(resources.serverlessEndpoint, TEAM, manifests.serverlessEndpoint('queue'));
    await Promise.all([
      cluster.waitFor(resources.gpuPod, TEAM, 'trainer', isReady(), 'Ready'),
      cluster.waitFor(resources.serverlessEndpoint, TEAM, 'queue', isReady(), 'Ready'),
    ]);
  });
  after(async () => {
    await operator?.stop();
  });

  test('the apiserver lists the group in /openapi/v3 and serves its document; /openapi/v2 has it merged', async () => {
    const admin = stack.cluster().client;
    const index = await poll(
      () => admin.request(v3Index, { method: 'GET', path: '/openapi/v3' }),
      (found) => found.paths[GROUP_PATH] !== undefined,
      `${GROUP_PATH} in /openapi/v3`,
      60_000,
    );
    const url = new URL(index.paths[GROUP_PATH]?.serverRelativeURL ?? '', 'https://x');
    assert.match(url.search, /^\?hash=[0-9A-F]{128}$/);
    // As a tenant reads it: any authenticated user may read the documents, as the apiserver's own.
    const document = await clientAs(stack.plane(), 'viewer').request(v3Document, {
      method: 'GET',
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
    });
    assert.equal(document.openapi, '3.0.0');
    const prefix = `/apis/${TENANT_GROUP_VERSION}/namespaces/{namespace}/`;
    assert.deepEqual(Object.keys(document.paths).sort(), [
      `${prefix}gpupods/{name}/log`,
      `${prefix}gpupods/{name}/metrics`,
      `${prefix}serverlessendpoints/{name}/tasks`,
      `${prefix}serverlessendpoints/{name}/tasks/count`,
      `${prefix}serverlessendpoints/{name}/tasks/{taskId}`,
    ]);
    assert.deepEqual(Object.keys(document.paths[`${prefix}serverlessendpoints/{name}/tasks`] ?? {}).sort(), [
      'get',
      'parameters',
      'post',
    ]);
    const metrics = document.components.schemas['io.gpucloud.tenant.v1alpha1.GpuPodMetrics'];
    assert.deepEqual(metrics?.['x-kubernetes-group-version-kind'], [
      { group: 'tenant.gpucloud.io', version: 'v1alpha1', kind: 'GpuPodMetrics' },
    ]);

    const merged = await poll(
      () =>
        admin.request(
          z.looseObject({
            paths: z.record(z.string(), z.unknown()),
            definitions: z.record(z.string(), z.unknown()),
          }),
          { method: 'GET', path: '/openapi/v2' },
        ),
      (found) => found.paths[`${prefix}gpupods/{name}/log`] !== undefined,
      'the group in /openapi/v2',
      60_000,
    );
    assert.ok(merged.definitions['io.gpucloud.tenant.v1alpha1.ServerlessTask']);
    assert.ok(
      merged.paths['/api/v1/namespaces/{namespace}/pods/{name}/log'],
      "the apiserver's own paths stay",
    );
  });

  test('every answer is what the documents say, field for field', async () => {
    const viewer = clientAs(stack.plane(), 'viewer');
    const cloud = new GpuCloudClient({ baseUrl: stack.sim().url, apiKey: API_KEY });
    const endpoint = await stack
      .cluster()
      .client.request(z.looseObject({ status: z.object({ id: z.string() }) }), {
        method: 'GET',
        path: `/apis/gpucloud.io/v1alpha1/namespaces/${TEAM}/serverlessendpoints/queue`,
      });
    try {
      await cloud.serverless.tasks.submit(endpoint.status.id, { taskId: 'documented', input: { n: 1 } });
    } finally {
      await cloud.close();
    }
    const answers: Array<[keyof typeof tenantSchemas, string]> = [
      ['GpuPodMetrics', api('gpupods', 'trainer', 'metrics')],
      ['ServerlessTaskList', api('serverlessendpoints', 'queue', 'tasks')],
      ['ServerlessTask', api('serverlessendpoints', 'queue', 'tasks/documented')],
      ['ServerlessTaskCounts', api('serverlessendpoints', 'queue', 'tasks/count')],
    ];
    for (const [name, path] of answers) {
      const raw = await viewer.request(z.record(z.string(), z.unknown()), { method: 'GET', path });
      const schema = tenantSchemas[name];
      // The answer is in the schema's application form (encoding validates it), with no field it lacks.
      assert.doesNotThrow(() => z.encode(schema, raw as z.output<typeof schema>), name);
      assert.deepEqual(Object.keys(raw).sort(), Object.keys(schema.shape).sort(), name);
    }
  });

  test('each documented query parameter is taken', async () => {
    const document = await stack.cluster().client.request(v3Document, {
      method: 'GET',
      path: `/openapi/v3/${GROUP_PATH}`,
    });
    const examples: Record<string, string> = {
      follow: 'false',
      sinceSeconds: '3600',
      limit: '5',
      keyword: 'started',
      window: '10m',
      step: '30s',
      series: 'cpu,gpu',
      status: 'SUCCESS',
      page: '1',
      size: '10',
    };
    const concrete = (path: string) =>
      path.replace('{namespace}', TEAM).replace('{name}', path.includes('gpupods') ? 'trainer' : 'queue');
    const viewer = clientAs(stack.plane(), 'viewer');
    const seen: string[] = [];
    for (const [path, item] of Object.entries(document.paths)) {
      const parameters = getParameters.parse(item).get?.parameters ?? [];
      for (const { name } of parameters.filter((p) => p.in === 'query')) {
        seen.push(name);
        const value = examples[name];
        assert.ok(value !== undefined, `an example value of ${name}`);
        await viewer.request(z.unknown(), { method: 'GET', path: concrete(path), query: { [name]: value } });
      }
    }
    assert.deepEqual(seen.sort(), Object.keys(examples).sort());
  });

  test('a tenant counts its endpoint tasks by status, and so does its CLI, with no key', async () => {
    const viewer = clientAs(stack.plane(), 'viewer');
    const counted = z.looseObject({
      metadata: z.object({ namespace: z.string(), name: z.string() }),
      counts: z.record(z.string(), z.number()),
    });
    const answer = await viewer.request(counted, {
      method: 'GET',
      path: api('serverlessendpoints', 'queue', 'tasks/count'),
    });
    assert.deepEqual(answer.metadata, { namespace: TEAM, name: 'queue' });
    const total = Object.values(answer.counts).reduce((sum, n) => sum + n, 0);
    assert.ok(total >= 1, JSON.stringify(answer.counts));

    const kubeconfig = await serviceAccountKubeconfig(stack.plane(), stack.cluster().client, TEAM, 'viewer');
    const { stdout, stderr } = await promisify(execFile)(
      process.execPath,
      [join(ROOT, 'src/cli/gpucloud.ts'), 'tasks', 'count', 'sle/queue', '-n', TEAM, '-o', 'json', '-v'],
      {
        env: {
          PATH: [dirname(process.execPath), process.env.PATH].join(delimiter),
          KUBECONFIG: kubeconfig,
          HOME: stack.plane().dataDir,
        },
      },
    );
    assert.match(stderr, /through the Kubernetes API as your kubeconfig identity/);
    assert.deepEqual(JSON.parse(stdout), answer.counts);
  });
});
