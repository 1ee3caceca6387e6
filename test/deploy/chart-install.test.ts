import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  ApiException,
  ApiextensionsV1Api,
  AppsV1Api,
  AuthorizationV1Api,
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  RbacAuthorizationV1Api,
  type V1ResourceAttributes,
} from '@kubernetes/client-node';
import { API_VERSION, GROUP, kinds, managedKinds, VERSION } from '../../src/resources/kinds.ts';
import { PLAIN_MANIFESTS, REPO_ROOT } from '../../tools/helm/artifacts.ts';
import { type InstalledChart, installChart } from '../support/chart.ts';
import { useControlPlane } from '../support/control-plane.ts';
import { kubectl } from '../support/kubectl.ts';

// The chart and the plain manifests on a real kube-apiserver (no kubelet: Deployments get no pods, which
// these tests do not need), and the chart's RBAC checked as the apiserver enforces it, for the chart's
// own ServiceAccount: everything the operator does is allowed, and nothing more. The virtual nodes' grants
// are cluster-wide, so they come only with virtualNode.enabled.

const controlPlane = useControlPlane();

const WORKLOADS = 'team-a';
const OTHER = 'team-b';

/** What `kubectl auth can-i` asks: a SelfSubjectAccessReview as the identity of `kubeconfigPath`. */
async function can(kubeconfigPath: string, attributes: V1ResourceAttributes): Promise<boolean> {
  const config = new KubeConfig();
  config.loadFromFile(kubeconfigPath);
  const review = await config.makeApiClient(AuthorizationV1Api).createSelfSubjectAccessReview({
    body: { spec: { resourceAttributes: attributes } },
  });
  return review.status?.allowed === true;
}

function describeAccess({
  verb,
  group,
  resource,
  subresource,
  namespace,
  name,
}: V1ResourceAttributes): string {
  const what = `${group ? `${group}/` : ''}${resource}${subresource ? `/${subresource}` : ''}${name ? ` ${name}` : ''}`;
  return `${verb} ${what} ${namespace ? `in ${namespace}` : 'cluster-wide'}`;
}

async function assertAccess(kubeconfigPath: string, attributes: V1ResourceAttributes[], allowed: boolean) {
  const wrong: string[] = [];
  for (const access of attributes) {
    if ((await can(kubeconfigPath, access)) !== allowed) wrong.push(describeAccess(access));
  }
  assert.deepEqual(wrong, [], allowed ? 'denied, but the operator needs them' : 'allowed, but not needed');
}

/** Everything the operator does with its custom resources, Secrets and Events in `namespace`. */
function operatorAccess(namespace: string): V1ResourceAttributes[] {
  return [
    ...managedKinds.flatMap(({ plural }) => [
      ...['get', 'list', 'watch', 'patch'].map((verb) => ({
        verb,
        group: GROUP,
        resource: plural,
        namespace,
      })),
      { verb: 'patch', group: GROUP, resource: plural, subresource: 'status', namespace },
      { verb: 'update', group: GROUP, resource: plural, subresource: 'finalizers', namespace },
    ]),
    { verb: 'get', resource: 'secrets', namespace, name: 'hf-token' },
    // Connection Secrets (writeConnectionSecretToRef).
    { verb: 'create', resource: 'secrets', namespace },
    { verb: 'patch', resource: 'secrets', namespace, name: 'trainer-connection' },
    ...['create', 'patch'].flatMap((verb) => [
      { verb, resource: 'events', namespace },
      { verb, group: 'events.k8s.io', resource: 'events', namespace },
    ]),
  ];
}

/** What the virtual nodes do (docs/virtual-node.md): Nodes, their Leases, and the Pods bound to them in any namespace. */
function virtualNodeAccess(): V1ResourceAttributes[] {
  return [
    ...['create', 'patch', 'delete', 'watch'].map((verb) => ({ verb, resource: 'nodes' })),
    { verb: 'patch', resource: 'nodes', subresource: 'status' },
    { verb: 'watch', resource: 'pods' },
    ...['create', 'patch'].map((verb) => ({
      verb,
      group: 'coordination.k8s.io',
      resource: 'leases',
      namespace: 'kube-node-lease',
    })),
    // A bound Pod runs as a GpuPod of the node's making, with the ConfigMaps its env names, and is deleted
    // once its cloud pod is gone, as a kubelet does.
    ...[WORKLOADS, OTHER].flatMap((namespace) => [
      { verb: 'create', group: GROUP, resource: 'gpupods', namespace },
      { verb: 'delete', group: GROUP, resource: 'gpupods', namespace },
      { verb: 'get', resource: 'configmaps', namespace },
      { verb: 'patch', resource: 'pods', namespace },
      { verb: 'delete', resource: 'pods', namespace },
      { verb: 'patch', resource: 'pods', subresource: 'status', namespace },
      { verb: 'update', resource: 'pods', subresource: 'finalizers', namespace },
    ]),
  ];
}

async function rejectedWith(request: Promise<unknown>, status: number): Promise<void> {
  await assert.rejects(request, (error: unknown) => error instanceof ApiException && error.code === status);
}

describe('the chart installed with helm', () => {
  let chart: InstalledChart;
  let scoped: InstalledChart;
  let withNodes: InstalledChart;

  before(async () => {
    const core = controlPlane().kubeConfig.makeApiClient(CoreV1Api);
    for (const name of [WORKLOADS, OTHER]) await core.createNamespace({ body: { metadata: { name } } });
    chart = await installChart(controlPlane(), {
      release: 'chart-test',
      namespace: 'chart-system',
      values: { apiUrl: 'https://api.gpucloud.example' },
    });
    scoped = await installChart(controlPlane(), {
      release: 'scoped',
      namespace: 'scoped-system',
      values: { watchNamespaces: [WORKLOADS] },
    });
    withNodes = await installChart(controlPlane(), {
      release: 'nodes',
      namespace: 'nodes-system',
      values: { virtualNode: { enabled: true } },
    });
  });

  after(async () => {
    await chart?.uninstall();
    await scoped?.uninstall();
    await withNodes?.uninstall();
  });

  test('creates the CRDs, the identity, its RBAC, the Service and the Deployment', async () => {
    const { kubeConfig } = controlPlane();
    const extensions = kubeConfig.makeApiClient(ApiextensionsV1Api);
    for (const { plural } of kinds) {
      const crd = await extensions.readCustomResourceDefinition({ name: `${plural}.${GROUP}` });
      assert.equal(crd.status?.conditions?.find((c) => c.type === 'Established')?.status, 'True');
    }
    const name = 'chart-test-gpucloud-operator';
    const namespace = chart.namespace;
    assert.equal(chart.serviceAccount, name);
    await kubeConfig.makeApiClient(CoreV1Api).readNamespacedServiceAccount({ name, namespace });
    await kubeConfig.makeApiClient(CoreV1Api).readNamespacedService({ name: `${name}-metrics`, namespace });
    const rbac = kubeConfig.makeApiClient(RbacAuthorizationV1Api);
    await rbac.readClusterRole({ name });
    await rbac.readClusterRoleBinding({ name });
    await rbac.readNamespacedRole({ name: `${name}-leader-election`, namespace });
    const deployment = await kubeConfig
      .makeApiClient(AppsV1Api)
      .readNamespacedDeployment({ name, namespace });
    assert.equal(deployment.spec?.template.spec?.serviceAccountName, name);
  });

  test('helm install tells the user to create the credentials Secret, and how', () => {
    assert.match(
      chart.notes,
      /kubectl -n chart-system create secret generic chart-test-gpucloud-operator-credentials/,
    );
    assert.match(
      chart.notes,
      /--from-literal=api-key=<your API key>\n/,
      'apiUrl is set: no api-url key needed',
    );
    assert.match(
      scoped.notes,
      /--from-literal=api-key=<your API key> \\\n\s+--from-literal=api-url=https:\/\/<API host>/,
    );
    assert.match(scoped.notes, new RegExp(`watching namespace ${WORKLOADS} only`));
    assert.match(
      scoped.notes,
      new RegExp(`namespace: ${WORKLOADS}`),
      'the example resource goes where it is watched',
    );
  });

  test('its ServiceAccount may do everything the operator does, in any namespace', async () => {
    const leaseName = 'chart-test-gpucloud-operator';
    await assertAccess(
      chart.kubeconfigPath,
      [
        ...operatorAccess(WORKLOADS),
        ...operatorAccess(OTHER),
        ...managedKinds.map(({ plural }) => ({ verb: 'watch', group: GROUP, resource: plural })),
        { verb: 'watch', group: GROUP, resource: 'providerconfigs' },
        { verb: 'patch', group: GROUP, resource: 'providerconfigs', subresource: 'status' },
        { verb: 'watch', resource: 'namespaces' },
        { verb: 'create', group: 'coordination.k8s.io', resource: 'leases', namespace: chart.namespace },
        ...['get', 'update'].map((verb) => ({
          verb,
          group: 'coordination.k8s.io',
          resource: 'leases',
          namespace: chart.namespace,
          name: leaseName,
        })),
      ],
      true,
    );
  });

  test('and nothing more', async () => {
    await assertAccess(
      chart.kubeconfigPath,
      [
        { verb: 'list', resource: 'secrets', namespace: WORKLOADS },
        { verb: 'watch', resource: 'secrets', namespace: WORKLOADS },
        { verb: 'list', resource: 'secrets' },
        { verb: 'update', resource: 'secrets', namespace: WORKLOADS, name: 'hf-token' },
        { verb: 'delete', resource: 'secrets', namespace: WORKLOADS, name: 'hf-token' },
        { verb: 'update', group: GROUP, resource: 'gpupods', namespace: WORKLOADS },
        { verb: 'update', group: GROUP, resource: 'gpupods', subresource: 'status', namespace: WORKLOADS },
        {
          verb: 'patch',
          group: GROUP,
          resource: 'serverlessendpoints',
          subresource: 'scale',
          namespace: WORKLOADS,
        },
        { verb: 'delete', resource: 'events', namespace: WORKLOADS },
        { verb: 'create', group: 'apps', resource: 'deployments', namespace: WORKLOADS },
        { verb: 'create', group: 'coordination.k8s.io', resource: 'leases', namespace: 'default' },
        {
          verb: 'update',
          group: 'coordination.k8s.io',
          resource: 'leases',
          namespace: chart.namespace,
          name: 'other',
        },
        { verb: 'delete', group: 'coordination.k8s.io', resource: 'leases', namespace: chart.namespace },
        { verb: 'get', group: 'apiextensions.k8s.io', resource: 'customresourcedefinitions' },
        // Without virtualNode.enabled, nothing of the virtual nodes.
        ...virtualNodeAccess(),
      ],
      false,
    );
  });

  test('with virtualNode.enabled, its ServiceAccount may do what the virtual nodes do too', async () => {
    await assertAccess(withNodes.kubeconfigPath, [...operatorAccess(OTHER), ...virtualNodeAccess()], true);
  });

  test("the virtual nodes' grants on real requests: a Pod of another namespace deleted, a ConfigMap there read, only with virtualNode.enabled", async () => {
    const admin = controlPlane().kubeConfig.makeApiClient(CoreV1Api);
    // No controller-manager here to make the namespace's default ServiceAccount, which Pod admission wants.
    await admin.createNamespacedServiceAccount({ namespace: OTHER, body: { metadata: { name: 'default' } } });
    await admin.createNamespacedConfigMap({
      namespace: OTHER,
      body: { metadata: { name: 'settings' }, data: { MODE: 'fast' } },
    });
    await admin.createNamespacedPod({
      namespace: OTHER,
      body: {
        metadata: { name: 'workload' },
        spec: { containers: [{ name: 'main', image: 'example/app:1' }] },
      },
    });
    const as = (installed: InstalledChart) => {
      const config = new KubeConfig();
      config.loadFromFile(installed.kubeconfigPath);
      return config.makeApiClient(CoreV1Api);
    };

    const defaults = as(chart);
    await rejectedWith(defaults.readNamespacedConfigMap({ name: 'settings', namespace: OTHER }), 403);
    await rejectedWith(defaults.deleteNamespacedPod({ name: 'workload', namespace: OTHER }), 403);
    await admin.readNamespacedPod({ name: 'workload', namespace: OTHER });

    const nodes = as(withNodes);
    const settings = await nodes.readNamespacedConfigMap({ name: 'settings', namespace: OTHER });
    assert.equal(settings.data?.MODE, 'fast');
    await nodes.deleteNamespacedPod({ name: 'workload', namespace: OTHER, gracePeriodSeconds: 0 });
    await rejectedWith(admin.readNamespacedPod({ name: 'workload', namespace: OTHER }), 404);
  });

  test('the apiserver enforces it on real requests', async () => {
    const admin = controlPlane().kubeConfig;
    await admin.makeApiClient(CoreV1Api).createNamespacedSecret({
      namespace: WORKLOADS,
      body: { metadata: { name: 'hf-token' }, stringData: { HF_TOKEN: 'secret-value' } },
    });
    const pod = { group: GROUP, version: VERSION, namespace: WORKLOADS, plural: 'gpupods', name: 'trainer' };
    await admin.makeApiClient(CustomObjectsApi).createNamespacedCustomObject({
      ...pod,
      body: {
        apiVersion: API_VERSION,
        kind: 'GpuPod',
        metadata: { name: 'trainer' },
        spec: { image: 'pytorch/pytorch:2.4.0', gpuType: 'NVIDIA H100 80GB HBM3', gpuCount: 1 },
      },
    });

    const operator = new KubeConfig();
    operator.loadFromFile(chart.kubeconfigPath);
    const core = operator.makeApiClient(CoreV1Api);
    const secret = await core.readNamespacedSecret({ name: 'hf-token', namespace: WORKLOADS });
    assert.equal(Buffer.from(secret.data?.HF_TOKEN ?? '', 'base64').toString(), 'secret-value');
    await rejectedWith(core.listNamespacedSecret({ namespace: WORKLOADS }), 403);

    const objects = operator.makeApiClient(CustomObjectsApi);
    const listed = (await objects.listClusterCustomObject({
      group: GROUP,
      version: VERSION,
      plural: 'gpupods',
    })) as {
      items: unknown[];
    };
    assert.equal(listed.items.length, 1);
    const patched = (await objects.patchNamespacedCustomObjectStatus({
      ...pod,
      body: [{ op: 'add', path: '/status', value: { phase: 'INITIALIZING' } }],
    })) as { status: { phase: string } };
    assert.equal(patched.status.phase, 'INITIALIZING');
    await rejectedWith(
      objects.replaceNamespacedCustomObject({ ...pod, body: { ...(patched as object), spec: {} } }),
      403,
    );

    const leases = operator.makeApiClient(CoordinationV1Api);
    const lease = await leases.createNamespacedLease({
      namespace: chart.namespace,
      body: { metadata: { name: 'chart-test-gpucloud-operator' }, spec: { holderIdentity: 'test' } },
    });
    assert.equal(lease.spec?.holderIdentity, 'test');
    await core.createNamespacedEvent({
      namespace: WORKLOADS,
      body: {
        metadata: { generateName: 'trainer.' },
        involvedObject: { apiVersion: API_VERSION, kind: 'GpuPod', name: 'trainer', namespace: WORKLOADS },
        reason: 'Created',
        message: 'created the cloud pod',
        type: 'Normal',
      },
    });
  });

  test('with watchNamespaces, the same access in that namespace only', async () => {
    await assertAccess(scoped.kubeconfigPath, operatorAccess(WORKLOADS), true);
    await assertAccess(
      scoped.kubeconfigPath,
      [
        ...operatorAccess(OTHER),
        ...managedKinds.map(({ plural }) => ({ verb: 'list', group: GROUP, resource: plural })),
        { verb: 'get', resource: 'secrets', namespace: 'default', name: 'hf-token' },
      ],
      false,
    );
  });

  test('helm uninstall keeps the CRDs and the custom resources', async () => {
    await scoped.uninstall();
    const { kubeConfig } = controlPlane();
    const rbac = kubeConfig.makeApiClient(RbacAuthorizationV1Api);
    await rejectedWith(
      rbac.readNamespacedRole({ name: 'scoped-gpucloud-operator', namespace: WORKLOADS }),
      404,
    );
    for (const { plural } of kinds) {
      await kubeConfig
        .makeApiClient(ApiextensionsV1Api)
        .readCustomResourceDefinition({ name: `${plural}.${GROUP}` });
    }
    await kubeConfig.makeApiClient(CustomObjectsApi).getNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: WORKLOADS,
      plural: 'gpupods',
      name: 'trainer',
    });
  });
});

describe('the plain manifests', () => {
  const file = join(REPO_ROOT, PLAIN_MANIFESTS);

  test('kubectl apply --dry-run=server accepts every object', async () => {
    // A dry run creates nothing, the namespace included: the namespaced objects need it to exist.
    await kubectl(controlPlane(), 'create', 'namespace', 'gpucloud-system');
    const output = await kubectl(controlPlane(), 'apply', '--dry-run=server', '-f', file);
    assert.match(output, /deployment\.apps\/gpucloud-operator (created|configured) \(server dry run\)/);
  });

  test('kubectl apply --server-side installs the operator, as the docs say', async () => {
    await kubectl(controlPlane(), 'apply', '--server-side', '-f', file);
    const { kubeConfig } = controlPlane();
    const deployment = await kubeConfig
      .makeApiClient(AppsV1Api)
      .readNamespacedDeployment({ name: 'gpucloud-operator', namespace: 'gpucloud-system' });
    assert.equal(deployment.spec?.template.spec?.serviceAccountName, 'gpucloud-operator');
    const rbac = kubeConfig.makeApiClient(RbacAuthorizationV1Api);
    await rbac.readClusterRole({ name: 'gpucloud-operator' });
    // The chart's defaults: no virtual nodes, so none of their cluster-wide grants (docs/install.md).
    await rejectedWith(rbac.readClusterRole({ name: 'gpucloud-operator-virtual-nodes' }), 404);
  });
});
