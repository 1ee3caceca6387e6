import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { describe, test } from 'node:test';
import type { V1PolicyRule, V1Role } from '@kubernetes/client-node';
import { load } from 'js-yaml';
import { managedKinds } from '../../src/resources/kinds.ts';
import { CHART_DIR, HelmError, helm } from '../../tools/helm/helm.ts';
import { ALL_ON_VALUES, type Manifest, NAMESPACE, RELEASE, renderChart } from './chart-render.ts';

// The chart as `helm lint` and `helm template` see it: what it renders with the defaults and with every
// option on, and what it refuses.

const plurals = managedKinds.map((kind) => kind.plural);

/** The operator's rules, exactly: anything more is a privilege it does not need. */
const operatorRules: V1PolicyRule[] = [
  { apiGroups: ['gpucloud.io'], resources: plurals, verbs: ['get', 'list', 'watch', 'patch'] },
  // Only finished tasks past their TTL are deleted by the operator.
  { apiGroups: ['gpucloud.io'], resources: ['serverlesstasks'], verbs: ['delete'] },
  { apiGroups: ['gpucloud.io'], resources: plurals.map((p) => `${p}/status`), verbs: ['patch'] },
  { apiGroups: ['gpucloud.io'], resources: plurals.map((p) => `${p}/finalizers`), verbs: ['update'] },
  { apiGroups: [''], resources: ['secrets'], verbs: ['get', 'create', 'patch'] },
  { apiGroups: ['', 'events.k8s.io'], resources: ['events'], verbs: ['create', 'patch'] },
];

/** Cloud accounts: cluster-scoped, so a ClusterRole even with watchNamespaces; namespaces for label selectors. */
const accountRules: V1PolicyRule[] = [
  { apiGroups: ['gpucloud.io'], resources: ['providerconfigs'], verbs: ['get', 'list', 'watch', 'patch'] },
  { apiGroups: ['gpucloud.io'], resources: ['providerconfigs/status'], verbs: ['patch'] },
  { apiGroups: ['gpucloud.io'], resources: ['providerconfigs/finalizers'], verbs: ['update'] },
  { apiGroups: [''], resources: ['namespaces'], verbs: ['get', 'list', 'watch'] },
];

/** Virtual nodes: the Nodes themselves, the Pods bound to them in any namespace, and what runs those Pods. */
const virtualNodeRules: V1PolicyRule[] = [
  { apiGroups: [''], resources: ['nodes'], verbs: ['get', 'list', 'watch', 'create', 'patch', 'delete'] },
  { apiGroups: [''], resources: ['nodes/status'], verbs: ['patch'] },
  { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch', 'patch', 'delete'] },
  { apiGroups: [''], resources: ['pods/status'], verbs: ['patch'] },
  { apiGroups: [''], resources: ['pods/finalizers'], verbs: ['update'] },
  { apiGroups: [''], resources: ['configmaps'], verbs: ['get'] },
  { apiGroups: ['gpucloud.io'], resources: ['gpupods'], verbs: ['create', 'delete'] },
];

/** Account keys are Secrets in the release namespace, read by name. */
const accountKeyRules: V1PolicyRule[] = [{ apiGroups: [''], resources: ['secrets'], verbs: ['get'] }];

function leaseRules(leaseName: string): V1PolicyRule[] {
  return [
    { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create'] },
    {
      apiGroups: ['coordination.k8s.io'],
      resources: ['leases'],
      resourceNames: [leaseName],
      verbs: ['get', 'update'],
    },
  ];
}

async function renderFailure(values: Record<string, unknown>): Promise<string> {
  const error = await renderChart({ values }).then(
    () => assert.fail('the chart rendered values it should refuse'),
    (failure: unknown) => failure,
  );
  assert.ok(error instanceof HelmError, String(error));
  return error.stderr;
}

describe('helm lint', () => {
  test('passes strictly with the default values', async () => {
    await helm(['lint', '--strict', CHART_DIR]);
  });

  test('passes strictly with every option on', async () => {
    await helm(['lint', '--strict', CHART_DIR, '--values', ALL_ON_VALUES]);
  });
});

describe('the chart with its default values', async () => {
  const rendered = await renderChart();

  test('renders the operator objects, and no Secret: the user creates the credentials', () => {
    const kinds = rendered.manifests.map((m) => `${m.kind}/${m.metadata?.name}`).sort();
    assert.deepEqual(kinds, [
      `ClusterRole/${RELEASE}`,
      `ClusterRole/${RELEASE}-accounts`,
      `ClusterRoleBinding/${RELEASE}`,
      `ClusterRoleBinding/${RELEASE}-accounts`,
      `Deployment/${RELEASE}`,
      `NetworkPolicy/${RELEASE}`,
      `Role/${RELEASE}-account-keys`,
      `Role/${RELEASE}-leader-election`,
      `RoleBinding/${RELEASE}-account-keys`,
      `RoleBinding/${RELEASE}-leader-election`,
      `Service/${RELEASE}-metrics`,
      `ServiceAccount/${RELEASE}`,
      `ValidatingAdmissionPolicy/${RELEASE}-annotations`,
      `ValidatingAdmissionPolicy/${RELEASE}-deletion-protection`,
      `ValidatingAdmissionPolicyBinding/${RELEASE}-annotations`,
      `ValidatingAdmissionPolicyBinding/${RELEASE}-deletion-protection`,
    ]);
  });

  test('the ClusterRoles grant exactly what the operator does', () => {
    assert.deepEqual(rendered.one<V1Role & Manifest>('ClusterRole', RELEASE).rules, operatorRules);
    assert.deepEqual(
      rendered.one<V1Role & Manifest>('ClusterRole', `${RELEASE}-accounts`).rules,
      accountRules,
    );
    const keys = rendered.one<V1Role & Manifest>('Role', `${RELEASE}-account-keys`);
    assert.equal(keys.metadata?.namespace, NAMESPACE);
    assert.deepEqual(keys.rules, accountKeyRules);
  });

  test('no virtual nodes: nothing on Nodes, Pods or ConfigMaps is granted, and the operator runs none', () => {
    // Their grants are cluster-wide (docs/virtual-node.md): a platform that runs no virtual node gives none.
    const granted = [...rendered.all('ClusterRole'), ...rendered.all('Role')].flatMap((role) =>
      ((role as V1Role & Manifest).rules ?? []).flatMap((rule) => rule.resources ?? []),
    );
    for (const resource of ['nodes', 'pods', 'configmaps']) {
      assert.ok(!granted.some((r) => r === resource || r.startsWith(`${resource}/`)), resource);
    }
    assert.ok(rendered.container().args?.includes('--virtual-nodes=false'));
  });

  test('the Lease Role is in the release namespace and names the lease the operator uses', () => {
    const role = rendered.one<V1Role & Manifest>('Role', `${RELEASE}-leader-election`);
    assert.equal(role.metadata?.namespace, NAMESPACE);
    assert.deepEqual(role.rules, leaseRules(RELEASE));
    const args = rendered.container().args ?? [];
    assert.ok(args.includes(`--lease-name=${RELEASE}`));
    assert.ok(args.includes(`--lease-namespace=${NAMESPACE}`));
  });

  test('every binding names the chart ServiceAccount', () => {
    for (const binding of [...rendered.all('ClusterRoleBinding'), ...rendered.all('RoleBinding')]) {
      const { subjects } = binding as Manifest & { subjects: unknown };
      assert.deepEqual(subjects, [{ kind: 'ServiceAccount', name: RELEASE, namespace: NAMESPACE }]);
    }
    assert.equal(rendered.deployment().spec?.template.spec?.serviceAccountName, RELEASE);
  });

  test('the pod runs non-root, read-only, without capabilities, under the RuntimeDefault seccomp profile', () => {
    const pod = rendered.deployment().spec?.template.spec;
    assert.deepEqual(pod?.securityContext, {
      runAsNonRoot: true,
      runAsUser: 65532,
      runAsGroup: 65532,
      fsGroup: 65532,
      seccompProfile: { type: 'RuntimeDefault' },
    });
    assert.deepEqual(rendered.container().securityContext, {
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      runAsNonRoot: true,
      capabilities: { drop: ['ALL'] },
      seccompProfile: { type: 'RuntimeDefault' },
    });
  });

  test('/tmp is the one writable place', () => {
    const mounts = rendered.container().volumeMounts ?? [];
    assert.deepEqual(
      mounts.filter((mount) => !mount.readOnly).map((mount) => mount.mountPath),
      ['/tmp'],
    );
  });

  test('liveness and readiness probe /healthz and /readyz on the health port', () => {
    const container = rendered.container();
    assert.deepEqual(container.ports, [{ name: 'http-health', containerPort: 8081, protocol: 'TCP' }]);
    assert.deepEqual(container.livenessProbe?.httpGet, { path: '/healthz', port: 'http-health' });
    assert.deepEqual(container.readinessProbe?.httpGet, { path: '/readyz', port: 'http-health' });
    assert.ok(container.args?.includes('--health-port=8081'));
  });

  test('resources have requests and a memory limit', () => {
    assert.deepEqual(rendered.container().resources, {
      requests: { cpu: '100m', memory: '128Mi' },
      limits: { memory: '512Mi' },
    });
  });

  test('the API key is a mounted file, the URL comes from the same Secret', () => {
    const container = rendered.container();
    const pod = rendered.deployment().spec?.template.spec;
    assert.ok(container.args?.includes('--api-key-file=/var/run/secrets/gpucloud.io/credentials/api-key'));
    assert.deepEqual(pod?.volumes?.find((volume) => volume.name === 'credentials')?.secret, {
      secretName: `${RELEASE}-credentials`,
      items: [{ key: 'api-key', path: 'api-key' }],
      defaultMode: 0o440, // readable by the owner and the pod's fsGroup only
    });
    assert.deepEqual(container.env, [
      {
        name: 'GPUCLOUD_API_URL',
        valueFrom: { secretKeyRef: { name: `${RELEASE}-credentials`, key: 'api-url' } },
      },
      // The virtual nodes' InternalIP (and the tenant API's endpoint, when it is on).
      { name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
    ]);
  });

  test('leader election is on, so updates roll with a standby', () => {
    const deployment = rendered.deployment();
    assert.ok(rendered.container().args?.includes('--leader-elect=true'));
    assert.equal(deployment.spec?.strategy?.type, 'RollingUpdate');
    assert.equal(deployment.spec?.replicas, 1);
  });

  test('every object carries the Argo CD sync wave that puts it before custom resources', () => {
    for (const manifest of rendered.manifests) {
      const wave = manifest.metadata?.annotations?.['argocd.argoproj.io/sync-wave'];
      assert.equal(wave, '-1', `${manifest.kind}/${manifest.metadata?.name}`);
    }
  });
});

/** The NetworkPolicy as rendered: what may reach the operator pod, and where it may connect. */
interface Policy {
  spec: {
    podSelector: { matchLabels: Record<string, string> };
    policyTypes: string[];
    ingress: Array<{ ports: Array<{ port: string | number; endPort?: number }>; from?: unknown[] }>;
    egress: Array<{
      ports: Array<{ port: number; protocol: string }>;
      to?: Array<{ ipBlock: { cidr: string } }>;
    }>;
  };
}

describe('the NetworkPolicy', async () => {
  const byDefault = (await renderChart()).one<Policy & Manifest>('NetworkPolicy');
  const allOnRender = await renderChart({ valuesFile: ALL_ON_VALUES });
  const allOn = allOnRender.one<Policy & Manifest>('NetworkPolicy');
  const tcp = (ports: number[]) => ports.map((port) => ({ port, protocol: 'TCP' }));
  const dns = {
    ports: [
      { port: 53, protocol: 'UDP' },
      { port: 53, protocol: 'TCP' },
    ],
  };

  test('is on by default, selects the operator pod only, and restricts both directions', () => {
    assert.deepEqual(byDefault.spec.policyTypes, ['Ingress', 'Egress']);
    assert.equal(byDefault.spec.podSelector.matchLabels['app.kubernetes.io/name'], 'gpucloud-operator');
    assert.equal(byDefault.spec.podSelector.matchLabels['app.kubernetes.io/instance'], RELEASE);
  });

  test('lets in only the health port, and the callback, tenant API and kubelet API ports when they are served', () => {
    assert.deepEqual(
      byDefault.spec.ingress.map((rule) => rule.ports),
      [[{ port: 'http-health', protocol: 'TCP' }]],
    );
    assert.deepEqual(
      allOn.spec.ingress.map((rule) => rule.ports.map((port) => port.port)),
      [['http-health'], ['http-callbacks'], ['https-tenant'], [10251]],
    );
    assert.deepEqual(allOn.spec.ingress.at(-1)?.ports, [{ port: 10251, endPort: 10253, protocol: 'TCP' }]);
    assert.ok(
      allOn.spec.ingress.every((rule) => (rule.from?.length ?? 0) > 0),
      'each from the peers listed',
    );
  });

  test('lets out DNS, and the apiserver and the cloud API on their ports, to the CIDRs given', () => {
    assert.deepEqual(byDefault.spec.egress, [dns, { ports: tcp([443, 6443]) }, { ports: tcp([443]) }]);
    assert.deepEqual(allOn.spec.egress, [
      dns,
      {
        ports: tcp([443, 6443]),
        to: [{ ipBlock: { cidr: '10.96.0.1/32' } }, { ipBlock: { cidr: '192.0.2.10/32' } }],
      },
      { ports: tcp([443]), to: [{ ipBlock: { cidr: '203.0.113.0/28' } }] },
    ]);
  });

  test('refuses a CIDR that is not one', async () => {
    const stderr = await renderFailure({ networkPolicy: { cloudApi: { cidrs: ['api.example.com'] } } });
    assert.match(stderr, /cidrs/);
  });
});

describe('the chart watching a list of namespaces', async () => {
  const watched = ['team-a', 'team-b'];
  const rendered = await renderChart({ values: { watchNamespaces: watched } });

  test('grants the operator rules in each namespace, by a Role, and tells the operator the list', () => {
    const roles = rendered.all('Role').filter((role) => role.metadata?.name === RELEASE);
    assert.deepEqual(
      roles.map((role) => role.metadata?.namespace),
      watched,
    );
    for (const role of roles) assert.deepEqual((role as V1Role & Manifest).rules, operatorRules);
    const bindings = rendered.all('RoleBinding').filter((binding) => binding.metadata?.name === RELEASE);
    assert.deepEqual(
      bindings.map((binding) => binding.metadata?.namespace),
      watched,
    );
    assert.ok(rendered.container().args?.includes('--namespace=team-a,team-b'));
    assert.ok(!rendered.all('ClusterRole').some((role) => role.metadata?.name === RELEASE));
  });
});

describe('the chart with every option on', async () => {
  const rendered = await renderChart({ valuesFile: ALL_ON_VALUES });
  const allOn = load(await readFile(ALL_ON_VALUES, 'utf8')) as {
    watchNamespaces: string[];
    leaderElection: { leaseName: string; leaseNamespace: string };
    apiKey: { value: string };
    callbacks: { token: string };
  };

  test('renders every optional object', () => {
    for (const kind of ['Secret', 'ServiceMonitor', 'PodDisruptionBudget', 'NetworkPolicy']) {
      assert.equal(rendered.all(kind).length, 1, kind);
    }
    assert.deepEqual(
      rendered.all('Service').map((s) => s.metadata?.name),
      [`${RELEASE}-metrics`, `${RELEASE}-callbacks`, `${RELEASE}-tenant-api`],
    );
  });

  test('virtualNode.enabled grants what the virtual nodes do, and turns them on', () => {
    assert.deepEqual(
      rendered.one<V1Role & Manifest>('ClusterRole', `${RELEASE}-virtual-nodes`).rules,
      virtualNodeRules,
    );
    // With the kubelet API served (virtualNode.tlsSecret): its callers' tokens and access reviewed.
    const delegator = rendered.one(
      'ClusterRoleBinding',
      `${RELEASE}-virtual-nodes-auth-delegator`,
    ) as Manifest & {
      roleRef: { name: string };
    };
    assert.equal(delegator.roleRef.name, 'system:auth-delegator');
    const leases = rendered.one<V1Role & Manifest>('Role', `${RELEASE}-node-leases`);
    assert.equal(leases.metadata?.namespace, 'kube-node-lease');
    assert.deepEqual(leases.rules, [
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create', 'patch'] },
    ]);
    assert.equal(
      rendered.one('RoleBinding', `${RELEASE}-node-leases`).metadata?.namespace,
      'kube-node-lease',
    );
    assert.ok(rendered.container().args?.includes('--virtual-nodes=true'));
  });

  test('with watchNamespaces, the operator rules are a Role in that namespace; only the accounts and virtual nodes ClusterRoles stay', () => {
    const names = (kind: string) => rendered.all(kind).map((manifest) => manifest.metadata?.name);
    // Besides the tenant API's, which are cluster-wide by nature (test/deploy/tenant-api-chart.test.ts).
    const operator = (kind: string) => names(kind).filter((name) => !name?.startsWith(`${RELEASE}-tenant-`));
    // Nodes are the cluster's, and a Pod of any namespace may be bound to a virtual node.
    const clusterWide = [`${RELEASE}-accounts`, `${RELEASE}-virtual-nodes`];
    assert.deepEqual(operator('ClusterRole'), clusterWide);
    assert.deepEqual(operator('ClusterRoleBinding'), [
      ...clusterWide,
      `${RELEASE}-virtual-nodes-auth-delegator`,
    ]);
    const role = rendered.one<V1Role & Manifest>('Role', RELEASE);
    assert.equal(role.metadata?.namespace, allOn.watchNamespaces[0]);
    assert.deepEqual(role.rules, operatorRules);
    assert.equal(rendered.one('RoleBinding', RELEASE).metadata?.namespace, allOn.watchNamespaces[0]);
  });

  test('the Lease Role follows leaseName and leaseNamespace', () => {
    const role = rendered.one<V1Role & Manifest>('Role', `${RELEASE}-leader-election`);
    assert.equal(role.metadata?.namespace, allOn.leaderElection.leaseNamespace);
    assert.deepEqual(role.rules, leaseRules(allOn.leaderElection.leaseName));
  });

  test('the secrets appear only base64-encoded in the chart Secret', () => {
    for (const secret of [allOn.apiKey.value, allOn.callbacks.token]) {
      assert.ok(!rendered.text.includes(secret), 'a secret value is rendered in clear');
    }
    const data = rendered.one('Secret').data as Record<string, string>;
    const decoded = Object.values(data).map((value) => Buffer.from(value, 'base64').toString('utf8'));
    assert.deepEqual(decoded.sort(), [allOn.apiKey.value, allOn.callbacks.token].sort());
  });

  test('a change of the chart Secret rolls the pods', () => {
    const annotations = rendered.deployment().spec?.template.metadata?.annotations ?? {};
    assert.match(annotations['checksum/credentials'] ?? '', /^[0-9a-f]{64}$/);
  });

  test('the callback port is a container port behind its own Service; each virtual node’s kubelet port is one', () => {
    const ports = rendered.container().ports?.map((port) => `${port.name}:${port.containerPort}`);
    assert.deepEqual(ports, [
      'http-health:9090',
      'http-callbacks:9443',
      'https-tenant:9444',
      'https-kubelet:10251',
      'https-kubelet-1:10252',
      'https-kubelet-2:10253',
    ]);
    const service = rendered.one('Service', `${RELEASE}-callbacks`) as Manifest & {
      spec: { ports: Array<{ targetPort: string }> };
    };
    assert.equal(service.spec.ports[0]?.targetPort, 'http-callbacks');
  });

  test('the image digest wins over the tag', () => {
    assert.match(
      rendered.container().image ?? '',
      /^ghcr\.io\/gpucloud\/gpucloud-operator@sha256:[0-9a-f]{64}$/,
    );
  });
});

describe('the chart refuses contradictory values', () => {
  test('more than one replica without leader election', async () => {
    const stderr = await renderFailure({ replicaCount: 2, leaderElection: { enabled: false } });
    assert.match(stderr, /replicaCount > 1 needs leaderElection\.enabled=true/);
  });

  test('an unknown value (values.schema.json is strict)', async () => {
    const stderr = await renderFailure({ image: { repo: 'typo' } });
    assert.match(stderr, /additional properties 'repo' not allowed|additionalProperties/);
  });

  test('a value of the wrong type', async () => {
    const stderr = await renderFailure({ operator: { concurrency: 'many' } });
    assert.match(stderr, /concurrency/);
  });

  test('both a chart-made and an existing API key Secret', async () => {
    const stderr = await renderFailure({
      apiUrl: 'https://a.example',
      apiKey: { value: 'k', existingSecret: 's' },
    });
    assert.match(stderr, /not both/);
  });

  test('a chart-made Secret without the API URL', async () => {
    assert.match(await renderFailure({ apiKey: { value: 'k' } }), /apiUrl is required/);
  });

  test('callbacks without the URL the cloud reaches', async () => {
    assert.match(await renderFailure({ callbacks: { enabled: true } }), /callbacks\.baseUrl/);
  });

  test("the kubelet API's Secret without virtual nodes", async () => {
    const stderr = await renderFailure({ virtualNode: { tlsSecret: 'kubelet-tls' } });
    assert.match(
      stderr,
      /virtualNode\.tlsSecret serves the virtual nodes' kubelet API: set virtualNode\.enabled=true/,
    );
  });

  test('a ServiceMonitor without the metrics Service', async () => {
    const stderr = await renderFailure({
      metrics: { service: { enabled: false }, serviceMonitor: { enabled: true } },
    });
    assert.match(stderr, /needs metrics\.service\.enabled/);
  });
});

describe('without leader election', async () => {
  const rendered = await renderChart({ values: { leaderElection: { enabled: false } } });

  test('the old pod stops before the new one starts, and no leader-election Lease permission is granted', () => {
    assert.equal(rendered.deployment().spec?.strategy?.type, 'Recreate');
    assert.ok(rendered.container().args?.includes('--leader-elect=false'));
    assert.deepEqual(
      rendered.all('Role').map((manifest) => manifest.metadata?.name),
      [`${RELEASE}-account-keys`],
    );
  });
});

describe('the chart and the repository agree', () => {
  test('the chart appVersion is the package version', async () => {
    const chart = load(await readFile(`${CHART_DIR}/Chart.yaml`, 'utf8')) as { appVersion: string };
    const pkg = JSON.parse(await readFile(new URL('../../package.json', import.meta.url), 'utf8')) as {
      version: string;
    };
    assert.equal(chart.appVersion, pkg.version);
  });
});
