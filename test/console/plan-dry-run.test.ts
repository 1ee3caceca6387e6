import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { dump } from 'js-yaml';
import { z } from 'zod';
import { judgeAdmission } from '../../src/console/plan-admission.ts';
import { KubeClient } from '../../src/kube/client.ts';
import { collectionPath } from '../../src/kube/resource-type.ts';
import { gpuPodKind, resourceOf } from '../../src/resources/kinds.ts';
import { type RunningSimulator, startSimulator } from '../../src/sim/index.ts';
import { endpoint, pod } from '../crds/admission-cases.ts';
import { useControlPlane } from '../support/control-plane.ts';
import { installCrds } from '../support/crds.ts';
import { grantTenant, writeKubeconfigAs } from '../support/impersonation.ts';
import { until } from '../support/until.ts';

// `gpucloud plan` with a cluster it may use: admission is the cluster's, by a dry run of the create (or of
// a server-side apply, for an object that exists), so the cluster's own admission policies and the
// transition rules count too, and nothing is stored. Without the right to create, it judges offline and
// says why. Against the local apiserver, the simulator over HTTP as the cloud.
const CLI = fileURLToPath(new URL('../../src/cli/gpucloud.ts', import.meta.url));
const NS = 'plan-dry-run';
const KEY = 'plan-dry-run-key';
const plane = useControlPlane();
let admin: KubeClient;
let sim: RunningSimulator;
let dir: string;
const kubeconfigs = new Map<string, string>();

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

/** `gpucloud plan -f FILE -n NS` as `user` (the admin unless named), with a key for the cloud. */
async function planAs(user: string | undefined, name: string, ...objects: object[]): Promise<Ran> {
  const file = join(dir, `${name}.yaml`);
  await writeFile(file, objects.map((object) => dump(object)).join('---\n'));
  const env = {
    PATH: process.env.PATH ?? '',
    HOME: dir,
    KUBECONFIG: (user && kubeconfigs.get(user)) || plane().kubeconfigPath,
    GPUCLOUD_API_URL: sim.url,
    GPUCLOUD_API_KEY: KEY,
  };
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      [CLI, 'plan', '-f', file, '-n', NS, '-o', 'json'],
      { env },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
    child.stdin?.end();
  });
}

const podsPath = collectionPath(resourceOf(gpuPodKind), NS);
const podNames = async () =>
  (
    await admin.request(
      z.object({ items: z.array(z.object({ metadata: z.object({ name: z.string() }) })) }),
      {
        method: 'GET',
        path: podsPath,
      },
    )
  ).items.map((item) => item.metadata.name);

/** Every GpuPod of the namespace must name its team: a rule of this cluster, not of the CRDs. */
async function requireTeamLabel(): Promise<void> {
  const body = (kind: string, spec: object) => ({
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind,
    metadata: { name: 'gpupods-name-a-team' },
    spec,
  });
  await admin.request(z.unknown(), {
    method: 'POST',
    path: '/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies',
    body: body('ValidatingAdmissionPolicy', {
      failurePolicy: 'Fail',
      matchConstraints: {
        resourceRules: [
          {
            apiGroups: ['gpucloud.io'],
            apiVersions: ['*'],
            operations: ['CREATE', 'UPDATE'],
            resources: ['gpupods'],
          },
        ],
      },
      validations: [
        {
          expression: "has(object.metadata.labels) && 'team' in object.metadata.labels",
          message: 'a GpuPod here names its team: label it team',
        },
      ],
    }),
  });
  await admin.request(z.unknown(), {
    method: 'POST',
    path: '/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings',
    body: body('ValidatingAdmissionPolicyBinding', {
      policyName: 'gpupods-name-a-team',
      validationActions: ['Deny'],
      matchResources: { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': NS } } },
    }),
  });
  // The policy takes effect once the apiserver's informer has it.
  await until(async () => {
    const [verdict] = await judgeAdmission(
      [{ source: 'probe', object: pod({}, 'probe') }],
      { kube: admin },
      NS,
    );
    return verdict?.refused !== undefined;
  }, 'the policy in force');
}

const labelled = (spec: Record<string, unknown>, name: string) => {
  const manifest = pod(spec, name);
  return { ...manifest, metadata: { ...manifest.metadata, labels: { team: 'ml' } } };
};

describe('gpucloud plan, admission by the cluster', () => {
  before(async () => {
    admin = new KubeClient(plane().connection);
    await installCrds(plane().connection);
    await admin.request(z.unknown(), {
      method: 'POST',
      path: '/api/v1/namespaces',
      body: { metadata: { name: NS } },
    });
    sim = await startSimulator({ apiKeys: [KEY], transitionMs: 0 });
    dir = await mkdtemp(join(tmpdir(), 'plan-dry-run-'));
    for (const user of ['viewer', 'tenant']) {
      kubeconfigs.set(user, await writeKubeconfigAs(plane(), user, join(dir, `${user}.kubeconfig`)));
    }
    await grantTenant(admin, NS, 'tenant', ['create', 'get', 'list', 'patch']);
    await requireTeamLabel();
  });
  after(async () => {
    await sim?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  test('the two findings are refused by the dry run, in the words the CRDs give offline', async () => {
    for (const [name, spec, rule] of [
      ['spotless', { maxPrice: 5 }, /spec\.maxPrice: Invalid value: maxPrice is only valid for spot pods/],
      ['three', { gpuCount: 3 }, /spec\.gpuCount: Invalid value: 3: gpuCount must be a power of 2/],
    ] as const) {
      const ran = await planAs(undefined, name, labelled(spec, name));
      assert.equal(ran.code, 2, `exit ${ran.code}: ${ran.stdout}${ran.stderr}`);
      assert.match(ran.stderr, rule);
      assert.match(ran.stderr, /\(judged by the cluster, a dry run\)/);
      const [online] = await judgeAdmission(
        [{ source: name, object: labelled(spec, name) }],
        { kube: admin },
        NS,
      );
      const [offline] = await judgeAdmission(
        [{ source: name, object: labelled(spec, name) }],
        { problem: 'offline' },
        NS,
      );
      assert.equal(offline?.refused, online?.refused, 'the same words');
    }
    assert.deepEqual(await podNames(), [], 'a dry run stores nothing');
  });

  test('offline and the cluster agree beyond the CRD suite: URLs, names, labels, nulls, types, generated names', async () => {
    const providerConfig = (apiUrl: string) => ({
      apiVersion: 'gpucloud.io/v1alpha1',
      kind: 'ProviderConfig',
      metadata: { name: 'agree' },
      spec: {
        apiUrl,
        credentials: { secretRef: { namespace: 'default', name: 'key', key: 'api-key' } },
        namespaces: { names: [NS] },
      },
    });
    const withMetadata = (metadata: Record<string, unknown>) => ({ ...labelled({}, 'agree'), metadata });
    const cases: Array<[string, object]> = [
      ...[
        'https://api.example.com',
        'https://api.example.com:8443/v1?x=1',
        'api.example.com',
        '/v1',
        'mailto:ops@example.com',
        'https://exa mple.com',
        'http://host:port',
        'http://a:1:2',
        'https://[::1]:443/',
        'https://[10.0.0.1]/',
        'https://host/%zz',
        'https://us%65r@host/',
        'https://ho%41st/',
        ':8080',
      ].map((url): [string, object] => [`apiUrl ${url}`, providerConfig(url)]),
      ['name with capitals', withMetadata({ name: 'My_Pod', labels: { team: 'ml' } })],
      ['generateName', withMetadata({ generateName: 'trainer-', labels: { team: 'ml' } })],
      ['label value with a space', withMetadata({ name: 'agree', labels: { team: 'm l' } })],
      [
        'label key with a prefix',
        withMetadata({ name: 'agree', labels: { team: 'ml', 'example.com/x': 'y' } }),
      ],
      [
        'annotation key with a space',
        withMetadata({ name: 'agree', labels: { team: 'ml' }, annotations: { 'a b': 'c' } }),
      ],
      ['an unknown metadata field', withMetadata({ name: 'agree', labels: { team: 'ml' }, owner: 'me' })],
      ['isSpot: null', labelled({ isSpot: null }, 'agree')],
      ['gpuType: null', labelled({ gpuType: null }, 'agree')],
      ['gpuCount as a string', labelled({ gpuCount: '1' }, 'agree')],
      ['an integer where a number goes', labelled({ isSpot: true, maxPrice: 2 }, 'agree')],
      ['status on a create', { ...labelled({}, 'agree'), status: { id: 'x', phase: 'Running' } }],
      [
        'a generated endpoint name too long for the cloud',
        { ...endpoint({}, 'x'), metadata: { generateName: 'inference-production-' } },
      ],
      ['a generated endpoint name that fits', { ...endpoint({}, 'x'), metadata: { generateName: 'infer-' } }],
    ];
    for (const [name, object] of cases) {
      const [online] = await judgeAdmission([{ source: name, object }], { kube: admin }, NS);
      const [offline] = await judgeAdmission([{ source: name, object }], { problem: 'offline' }, NS);
      assert.equal(online?.by, 'cluster', name);
      // The same words, but for the five random characters of a generated name.
      const generated = /(inference-production-)[a-z0-9]{5}/;
      assert.equal(
        offline?.refused?.replace(generated, '$1'),
        online?.refused?.replace(generated, '$1'),
        name,
      );
    }
  });

  test("the cluster's own admission policy refuses what the CRDs allow", async () => {
    const ran = await planAs(undefined, 'teamless', pod({}, 'teamless'));
    assert.equal(ran.code, 2, `exit ${ran.code}: ${ran.stdout}${ran.stderr}`);
    assert.match(ran.stderr, /GpuPod plan-dry-run\/teamless: .*a GpuPod here names its team/);
    const labelledRun = await planAs(undefined, 'team', labelled({}, 'team'));
    assert.equal(labelledRun.code, 0, labelledRun.stderr);
    const result = z
      .object({ admission: z.array(z.object({ by: z.string(), refused: z.string().optional() })) })
      .parse(JSON.parse(labelledRun.stdout));
    assert.deepEqual(result.admission, [{ by: 'cluster' }]);
  });

  test('an object that exists is judged as its update: transition rules count, the applied manifest passes', async () => {
    const existing = labelled({ name: 'trainer-pod' }, 'trainer');
    await admin.request(z.unknown(), { method: 'POST', path: podsPath, body: existing });
    const same = await planAs(undefined, 'same', existing);
    assert.equal(same.code, 0, same.stderr);
    const changed = await planAs(
      undefined,
      'changed',
      labelled({ name: 'trainer-pod', image: 'pytorch/pytorch:2.5.0' }, 'trainer'),
    );
    assert.equal(changed.code, 2, `exit ${changed.code}: ${changed.stdout}${changed.stderr}`);
    assert.match(
      changed.stderr,
      /spec\.image: Invalid value: .*image is immutable: delete and recreate the GpuPod/,
    );
    assert.deepEqual(await podNames(), ['trainer'], 'only the object created by the test');
  });

  test('a user who may not create judges offline, says why, and still refuses what the CRDs refuse', async () => {
    const allowed = await planAs('viewer', 'viewer-teamless', pod({}, 'viewer-teamless'));
    assert.equal(allowed.code, 0, allowed.stderr);
    const result = z
      .object({ admission: z.array(z.object({ by: z.string(), offline: z.string() })) })
      .parse(JSON.parse(allowed.stdout));
    assert.deepEqual(result.admission, [
      { by: 'crds', offline: `you may not create gpupods in namespace ${NS}` },
    ]);
    const refused = await planAs('viewer', 'viewer-three', labelled({ gpuCount: 3 }, 'viewer-three'));
    assert.equal(refused.code, 2);
    assert.match(
      refused.stderr,
      /gpuCount must be a power of 2 .*judged offline by the CRDs' schema and rules: you may not create gpupods/,
    );
    assert.deepEqual(await podNames(), ['trainer']);
  });

  test("a tenant's dry run is its own, in its namespace, and stores nothing; elsewhere it is judged offline", async () => {
    const own = await planAs('tenant', 'tenant-three', labelled({ gpuCount: 3 }, 'tenant-three'));
    assert.equal(own.code, 2);
    assert.match(own.stderr, /gpuCount must be a power of 2 .*judged by the cluster, a dry run/);
    const admittedRun = await planAs('tenant', 'tenant-ok', labelled({}, 'tenant-ok'));
    assert.equal(admittedRun.code, 0, admittedRun.stderr);
    const elsewhere = await planAs('tenant', 'tenant-elsewhere', {
      ...endpoint({}, 'elsewhere'),
      metadata: { name: 'elsewhere', namespace: 'default' },
    });
    assert.equal(elsewhere.code, 0, elsewhere.stderr);
    const result = z
      .object({ admission: z.array(z.object({ by: z.string(), offline: z.string() })) })
      .parse(JSON.parse(elsewhere.stdout));
    assert.deepEqual(result.admission, [
      { by: 'crds', offline: 'you may not create serverlessendpoints in namespace default' },
    ]);
    assert.deepEqual(await podNames(), ['trainer'], 'the dry runs stored nothing');
  });
});
