import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { dump, load, loadAll } from 'js-yaml';
import { z } from 'zod';
import { GpuCloudClient } from '../../src/api/client.ts';
import { collectionPath } from '../../src/kube/resource-type.ts';
import { EXTERNAL_ID } from '../../src/managed/core/annotations.ts';
import { clientAs, grantTenant } from '../support/impersonation.ts';
import {
  API_KEY,
  condition,
  isReady,
  manifests,
  resources,
  type TestObject,
  useOperator,
  useStack,
} from '../support/operator.ts';
import { reconciledAfter } from '../support/reconciled.ts';
import { poll } from '../support/until.ts';

// `kubectl gpucloud import` against the simulator over HTTP and the local apiserver: a fleet made outside
// the cluster is imported, applied with kubectl, adopted read-only and then fully managed, with no call
// that changes anything in the cloud; a second import finds nothing new.
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const NS = 'fleet';
const stack = useStack();

const MUTATING = /\.(create|update|terminate|delete|pause|resume|start|stop|scaleWorkers|submit)$/;
const mutations = (from: number) =>
  stack
    .sim()
    .calls.log()
    .slice(from)
    .filter((call) => MUTATING.test(call.operation));

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

function kubectl(args: string[], env: Record<string, string> = {}): Promise<Ran> {
  const base = {
    PATH: [join(ROOT, 'bin'), dirname(process.execPath), process.env.PATH].join(delimiter),
    HOME: tmpdir(),
    KUBECONFIG: stack.plane().kubeconfigPath,
    GPUCLOUD_API_URL: stack.sim().url,
    GPUCLOUD_API_KEY: API_KEY,
  };
  return new Promise((resolve) => {
    execFile('/usr/bin/kubectl', args, { env: { ...base, ...env } }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr });
    });
  });
}

const KINDS = {
  GpuPod: resources.gpuPod,
  GpuVm: resources.gpuVm,
  ServerlessEndpoint: resources.serverlessEndpoint,
} as const;

const manifestSchema = z.object({
  kind: z.enum(['GpuPod', 'GpuVm', 'ServerlessEndpoint']),
  metadata: z.object({
    name: z.string(),
    namespace: z.string(),
    annotations: z.record(z.string(), z.string()),
  }),
  spec: z.looseObject({ managementPolicies: z.array(z.string()) }),
});

describe('gpucloud import', () => {
  const operator = useOperator(stack, [NS]);
  let cloud: GpuCloudClient;
  const ids: Record<string, string> = {};
  let dir: string;

  before(async () => {
    cloud = new GpuCloudClient({ baseUrl: stack.sim().url, apiKey: API_KEY });
    dir = await mkdtemp(join(tmpdir(), 'import-'));
    // One the operator holds already: skipped, and its name taken in the namespace.
    await stack.cluster().create(resources.gpuPod, NS, manifests.gpuPod('notebook'));
    const held = await stack.cluster().waitFor(resources.gpuPod, NS, 'notebook', isReady(), 'Ready');
    ids.held = String(held?.status?.id);
    // Made outside the cluster, by hand or by scripts.
    const pod = {
      image: 'pytorch/pytorch:2.4',
      gpuType: 'NVIDIA L40S',
      gpuCount: 1,
      containerVolumeInGb: 50,
    };
    ids.train = (
      await cloud.pods.create({
        ...pod,
        name: 'Train Job #1',
        environmentVars: [
          { key: 'HF_TOKEN', value: 'hf-secret-value-1' },
          { key: 'MODE', value: 'train' },
        ],
        expose: [{ port: 8888, protocol: 'HTTP' }],
      })
    ).id;
    ids.train2 = (await cloud.pods.create({ ...pod, name: 'train_job_1' })).id;
    ids.notebook = (await cloud.pods.create({ ...pod, name: 'Notebook' })).id;
    ids.vm = String(
      (await cloud.vms.create({ vmTypeId: 401, region: 'us-east-1', isSpot: false, name: 'Render Box' })).id,
    );
    ids.endpoint = (
      await cloud.serverless.create({
        name: 'sd-api',
        image: 'vllm/vllm-openai:v0.6.0',
        resources: [{ region: 'us-east-1', gpuType: 'NVIDIA GeForce RTX 4090', gpuCount: 1 }],
        workers: 2,
        serviceMode: 'QUEUE',
        envVars: [{ key: 'API_TOKEN', value: 'endpoint-secret-1' }],
      })
    ).id;
    // A paused one: adopting it must keep it paused.
    await poll(
      () => cloud.pods.get(ids.train2 ?? ''),
      (found) => found.status === 'RUNNING',
      'the pod running',
    );
    await cloud.pods.pause(ids.train2);
    await poll(
      () => cloud.pods.get(ids.train2 ?? ''),
      (found) => found.status === 'PAUSED',
      'the pod paused',
    );
  });
  after(async () => {
    await cloud.close();
  });

  test('-o yaml prints a manifest per object no resource holds, values left out, and reports to stderr', async () => {
    const ran = await kubectl(['gpucloud', 'import', '-n', NS]);
    assert.equal(ran.code, 0, ran.stderr);
    for (const secret of ['hf-secret-value-1', 'endpoint-secret-1']) assert.ok(!ran.stdout.includes(secret));
    const docs = loadAll(ran.stdout).map((doc) => manifestSchema.parse(doc));
    const byId = new Map(docs.map((doc) => [doc.metadata.annotations[EXTERNAL_ID], doc]));
    assert.deepEqual(
      [...byId.keys()].sort(),
      [ids.train, ids.train2, ids.notebook, ids.vm, ids.endpoint].sort(),
    );
    assert.ok(docs.every((doc) => doc.spec.managementPolicies.join() === 'Observe'));
    const train = byId.get(ids.train);
    assert.equal(train?.metadata.name, 'train-job-1');
    assert.equal(train?.spec.name, 'Train Job #1');
    assert.deepEqual(train?.spec.environmentVars, [
      { key: 'HF_TOKEN', valueFrom: { secretKeyRef: { name: 'train-job-1-env', key: 'HF_TOKEN' } } },
      { key: 'MODE', valueFrom: { secretKeyRef: { name: 'train-job-1-env', key: 'MODE' } } },
    ]);
    assert.match(
      ran.stdout,
      /# environmentVars: the values are not written here\. Create Secret train-job-1-env/,
    );
    assert.equal(byId.get(ids.train2)?.metadata.name, `train-job-1-${ids.train2}`);
    assert.equal(byId.get(ids.train2)?.spec.paused, true);
    assert.equal(byId.get(ids.notebook)?.metadata.name, `notebook-${ids.notebook}`);
    assert.equal(byId.get(ids.vm)?.spec.vmTypeId, 401);
    assert.match(ran.stdout, /# vmTypeId 401 is inferred/);
    assert.equal(byId.get(ids.endpoint)?.spec.workers, 2);
    assert.equal(byId.get(ids.endpoint)?.spec.envVars, undefined);
    assert.match(
      ran.stderr,
      new RegExp(`skipped GpuPod ${ids.held} "notebook": held by gpupod/notebook -n ${NS}`),
    );
    assert.match(
      ran.stderr,
      new RegExp(`renamed GpuPod ${ids.notebook} "Notebook" to notebook-${ids.notebook}`),
    );
    assert.match(ran.stderr, /create Secret train-job-1-env -n fleet \(keys HF_TOKEN, MODE\)/);
    assert.match(ran.stderr, /account: the operator's own .* adoption follows its --default-adoption/);
    assert.match(ran.stderr, /Observe adopts: .* AdoptionNotAllowed/);
  });

  test('filters by kind, name, region and status', async () => {
    const names = async (args: string[]) => {
      const ran = await kubectl(['gpucloud', 'import', '-n', NS, '-o', 'json', ...args]);
      assert.equal(ran.code, 0, ran.stderr);
      const list = z.object({ items: z.array(manifestSchema) }).parse(JSON.parse(ran.stdout));
      return list.items.map((item) => item.metadata.annotations[EXTERNAL_ID]).sort();
    };
    assert.deepEqual(await names(['--kind', 'gpuvm']), [ids.vm]);
    assert.deepEqual(await names(['--kind', 'gpod', '--name', 'train*']), [ids.train, ids.train2].sort());
    assert.deepEqual(await names(['--kind', 'sle', '--region', 'eu-west-1']), []);
    assert.deepEqual(await names(['--kind', 'gpupod', '--status', 'paused']), [ids.train2]);
    const wrong = await kubectl(['gpucloud', 'import', '--kind', 'serverlesstask']);
    assert.equal(wrong.code, 2);
  });

  test('the manifests, applied, adopt every object read-only, then fully managed, with no cloud change', async () => {
    const ran = await kubectl(['gpucloud', 'import', '-n', NS, '--dir', dir]);
    assert.equal(ran.code, 0, ran.stderr);
    const files = (await readdir(dir)).sort();
    assert.equal(files.length, 5);
    assert.ok(files.includes('gpupod-train-job-1.yaml'), files.join());
    const applied: Array<{ kind: keyof typeof KINDS; name: string; id: string }> = [];
    for (const file of files) {
      const doc = manifestSchema.parse(loadAll(await readFile(join(dir, file), 'utf8'))[0]);
      applied.push({
        kind: doc.kind,
        name: doc.metadata.name,
        id: String(doc.metadata.annotations[EXTERNAL_ID]),
      });
    }
    // What the comment asks for: the Secret with the pod's values, created by its user.
    await stack.cluster().create(resources.secret, NS, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'train-job-1-env' },
      stringData: { HF_TOKEN: 'hf-secret-value-1', MODE: 'train' },
    });
    const mark = stack.sim().calls.log().length;
    const apply = await kubectl(['apply', '-f', dir]);
    assert.equal(apply.code, 0, apply.stderr);
    const settled = (policy: string) => (obj: TestObject | undefined) =>
      obj?.status?.observedGeneration === obj?.metadata.generation &&
      condition(obj, 'Synced')?.status === 'True' &&
      obj?.status?.id !== undefined &&
      JSON.stringify(obj?.spec?.managementPolicies) === policy;
    for (const { kind, name, id } of applied) {
      const adopted = await stack.cluster().waitFor(KINDS[kind], NS, name, settled('["Observe"]'), 'adopted');
      assert.equal(adopted?.status?.id, id);
    }
    assert.deepEqual(mutations(mark), [], 'adopting read-only changes nothing in the cloud');

    for (const { kind, name } of applied) {
      await stack.cluster().patch(KINDS[kind], NS, name, { spec: { managementPolicies: ['*'] } });
    }
    for (const { kind, name } of applied) {
      const managed = await stack.cluster().waitFor(KINDS[kind], NS, name, settled('["*"]'), 'fully managed');
      assert.ok(isReady()(managed), `${kind} ${name}: ${JSON.stringify(managed?.status?.conditions)}`);
    }
    // Reconciled once more after Synced=True: still nothing to change, so what import wrote is the cloud's.
    let touches = 0;
    for (const { kind, name } of applied) {
      await reconciledAfter(operator(), { controller: kind.toLowerCase(), namespace: NS, name }, () =>
        stack.cluster().patch(KINDS[kind], NS, name, {
          metadata: { annotations: { 'import.test/touch': String(++touches) } },
        }),
      );
    }
    assert.deepEqual(mutations(mark), [], 'full management of what import wrote changes nothing');
    const pod = await cloud.pods.get(ids.train2 ?? '');
    assert.equal(pod.status, 'PAUSED');

    const again = await kubectl(['gpucloud', 'import', '-n', NS]);
    assert.equal(again.code, 0, again.stderr);
    assert.equal(again.stdout, '');
    assert.match(again.stderr, /^nothing new to import/);
    for (const id of Object.values(ids)) assert.match(again.stderr, new RegExp(`skipped \\w+ ${id} `));
  });

  test('a tenant imports into its own namespace, seeing the claims it may list', async () => {
    const TENANT = 'team-import';
    await stack.cluster().ensureNamespace(TENANT);
    await grantTenant(stack.cluster().client, TENANT, 'importer', ['get', 'list']);
    const tenant = clientAs(stack.plane(), 'importer');
    // The tenant cannot list the fleet namespace's resources: its claims are unknown to it.
    await assert.rejects(
      tenant.request(z.unknown(), { method: 'GET', path: collectionPath(resources.gpuPod, NS) }),
    );
    // kubectl passes no --as to a plugin: the kubeconfig's user impersonates, as a tenant's would be its own.
    const config = load(await readFile(stack.plane().kubeconfigPath, 'utf8')) as {
      users: Array<{ user: Record<string, unknown> }>;
    };
    for (const entry of config.users) entry.user.as = 'importer';
    const tenantConfig = join(dir, 'tenant-kubeconfig');
    await writeFile(tenantConfig, dump(config));
    const ran = await kubectl(['gpucloud', 'import', '-n', TENANT, '-o', 'table'], {
      KUBECONFIG: tenantConfig,
    });
    assert.equal(ran.code, 0, ran.stderr);
    assert.match(ran.stderr, /claims were read in your namespace only/);
    // It sees the objects as importable (it cannot know their holders), named for its namespace.
    assert.match(ran.stdout, /^KIND\s+NAME\s+ID/);
    assert.match(ran.stdout, new RegExp(`GpuPod\\s+notebook\\s+${ids.held}`));
  });

  test('a platform team imports for a tenant: its namespace and account, the key from the cluster, adoption stated', async () => {
    const cluster = stack.cluster();
    await cluster.ensureNamespace('accounts');
    await cluster.ensureNamespace('team-b');
    await cluster.create(resources.secret, 'accounts', {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'shared-key' },
      stringData: { 'api-key': API_KEY },
    });
    await cluster.create(resources.providerConfig, '', {
      apiVersion: 'gpucloud.io/v1alpha1',
      kind: 'ProviderConfig',
      metadata: { name: 'shared' },
      spec: {
        apiUrl: stack.sim().url,
        credentials: { secretRef: { namespace: 'accounts', name: 'shared-key', key: 'api-key' } },
        namespaces: { names: ['team-a', 'team-b'] },
      },
    });
    await cloud.vms.create({ vmTypeId: 401, region: 'us-east-1', isSpot: false, name: 'team-b-box' });
    // No key in the environment: the account's Secret, which the platform team may read, gives it.
    const only = ['--kind', 'gpuvm', '--name', 'team-b-box'];
    const ran = await kubectl(
      ['gpucloud', 'import', '-n', 'team-b', '--provider-config', 'shared', ...only, '-o', 'json'],
      { GPUCLOUD_API_KEY: '', GPUCLOUD_API_URL: '' },
    );
    assert.equal(ran.code, 0, ran.stderr);
    const [vm] = z.object({ items: z.array(manifestSchema) }).parse(JSON.parse(ran.stdout)).items;
    assert.equal(vm?.metadata.namespace, 'team-b');
    assert.deepEqual(vm?.spec.providerConfigRef, { name: 'shared' });
    assert.match(ran.stderr, /account shared: adoption Denied by default \(several namespaces share it\)/);
    assert.match(ran.stderr, /allows adoption on that ProviderConfig \(spec\.adoption: Allowed\)/);

    const elsewhere = await kubectl(
      ['gpucloud', 'import', '-n', 'team-z', '--provider-config', 'shared', ...only, '-o', 'table'],
      { GPUCLOUD_API_KEY: '', GPUCLOUD_API_URL: '' },
    );
    assert.match(elsewhere.stderr, /namespace team-z is not among ProviderConfig shared's namespaces/);
  });
});
