import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { test } from 'node:test';
import { promisify } from 'node:util';
import {
  ApiException,
  ApiextensionsV1Api,
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  EventsV1Api,
  V1MicroTime,
  VersionApi,
  Watch,
} from '@kubernetes/client-node';
import { kubernetesVersion } from '../../src/local/controlplane/binary.ts';
import { useControlPlane } from '../support/control-plane.ts';
import { eventually } from '../support/eventually.ts';

const plane = useControlPlane();
const execFileAsync = promisify(execFile);

test('/version reports the Kubernetes release the binary was stamped with', async () => {
  const info = await plane().kubeConfig.makeApiClient(VersionApi).getCode();
  assert.equal(info.gitVersion, await kubernetesVersion());
});

test('kubectl works with the admin kubeconfig', async () => {
  const { stdout } = await execFileAsync('/usr/bin/kubectl', [
    '--kubeconfig',
    plane().kubeconfigPath,
    'get',
    'namespaces',
    '-o',
    'name',
  ]);
  assert.match(stdout, /^namespace\/default$/m);
  assert.match(stdout, /^namespace\/kube-system$/m);
});

test('a ConfigMap round-trips through etcd', async () => {
  const core = plane().kubeConfig.makeApiClient(CoreV1Api);
  const data = { 'settings.json': '{"gpus": 2}', empty: '' };
  await core.createNamespacedConfigMap({
    namespace: 'default',
    body: { metadata: { name: 'round-trip' }, data },
  });
  const read = await core.readNamespacedConfigMap({ namespace: 'default', name: 'round-trip' });
  assert.deepEqual(read.data, data);
});

test('a Lease can be created and renewed with optimistic concurrency', async () => {
  const coordination = plane().kubeConfig.makeApiClient(CoordinationV1Api);
  const created = await coordination.createNamespacedLease({
    namespace: 'default',
    body: {
      metadata: { name: 'leader' },
      spec: { holderIdentity: 'replica-a', leaseDurationSeconds: 15, acquireTime: new V1MicroTime() },
    },
  });
  const renewed = await coordination.replaceNamespacedLease({
    namespace: 'default',
    name: 'leader',
    body: { ...created, spec: { ...created.spec, renewTime: new V1MicroTime() } },
  });
  assert.equal(renewed.spec?.holderIdentity, 'replica-a');
  const stale = coordination.replaceNamespacedLease({
    namespace: 'default',
    name: 'leader',
    body: { ...created, spec: { ...created.spec, holderIdentity: 'replica-b' } },
  });
  await assert.rejects(stale, (error: unknown) => error instanceof ApiException && error.code === 409);
});

test('events can be recorded', async () => {
  const events = plane().kubeConfig.makeApiClient(EventsV1Api);
  await events.createNamespacedEvent({
    namespace: 'default',
    body: {
      metadata: { name: 'gpupod-created' },
      eventTime: new V1MicroTime(),
      reportingController: 'gpucloud.example/operator',
      reportingInstance: 'operator-0',
      action: 'Create',
      reason: 'Created',
      type: 'Normal',
      regarding: { kind: 'ConfigMap', namespace: 'default', name: 'round-trip' },
    },
  });
  const list = await events.listNamespacedEvent({ namespace: 'default' });
  assert.ok(list.items.some((event) => event.metadata?.name === 'gpupod-created'));
});

test('a CRD enforces its CEL validation rule', async () => {
  const kubeConfig = plane().kubeConfig;
  const extensions = kubeConfig.makeApiClient(ApiextensionsV1Api);
  await extensions.createCustomResourceDefinition({
    body: {
      metadata: { name: 'widgets.test.gpucloud.dev' },
      spec: {
        group: 'test.gpucloud.dev',
        scope: 'Namespaced',
        names: { plural: 'widgets', singular: 'widget', kind: 'Widget' },
        versions: [
          {
            name: 'v1',
            served: true,
            storage: true,
            schema: {
              openAPIV3Schema: {
                type: 'object',
                properties: {
                  spec: {
                    type: 'object',
                    properties: { min: { type: 'integer' }, max: { type: 'integer' } },
                    x_kubernetes_validations: [
                      { rule: 'self.min <= self.max', message: 'min must not exceed max' },
                    ],
                  },
                },
              },
            },
          },
        ],
      },
    },
  });
  const objects = kubeConfig.makeApiClient(CustomObjectsApi);
  const createWidget = (name: string, spec: { min: number; max: number }) =>
    objects.createNamespacedCustomObject({
      group: 'test.gpucloud.dev',
      version: 'v1',
      namespace: 'default',
      plural: 'widgets',
      body: { apiVersion: 'test.gpucloud.dev/v1', kind: 'Widget', metadata: { name }, spec },
    });
  // A CRD serves its kind only once established: creation is tried again while it answers 404.
  const notServedYet = (error: unknown) => error instanceof ApiException && error.code === 404;
  await eventually(() => createWidget('valid', { min: 1, max: 2 }), { retrying: notServedYet });
  await assert.rejects(
    createWidget('invalid', { min: 3, max: 2 }),
    (error: unknown) =>
      error instanceof ApiException &&
      error.code === 422 &&
      /min must not exceed max/.test(String(error.body)),
  );
});

test('watches deliver bookmarks (the initial-events-end bookmark of a streaming list)', async () => {
  const bookmark = Promise.withResolvers<Record<string, string>>();
  const controller = await new Watch(plane().kubeConfig).watch(
    '/api/v1/namespaces/default/configmaps',
    { allowWatchBookmarks: true, sendInitialEvents: true, resourceVersionMatch: 'NotOlderThan' },
    (phase, object: { metadata?: { annotations?: Record<string, string> } }) => {
      if (phase === 'BOOKMARK') bookmark.resolve(object.metadata?.annotations ?? {});
    },
    (error: unknown) => bookmark.reject(error ?? new Error('the watch ended before any bookmark')),
  );
  try {
    assert.equal((await bookmark.promise)['k8s.io/initial-events-end'], 'true');
  } finally {
    controller.abort();
  }
});
