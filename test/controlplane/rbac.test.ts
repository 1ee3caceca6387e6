import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  ApiException,
  AuthenticationV1Api,
  CoreV1Api,
  KubeConfig,
  RbacAuthorizationV1Api,
} from '@kubernetes/client-node';
import { useControlPlane } from '../support/control-plane.ts';

const plane = useControlPlane();
const namespace = 'default';

test('a service-account token kubeconfig acts as that account, with exactly its RBAC grants', async () => {
  const admin = plane().kubeConfig;
  const core = admin.makeApiClient(CoreV1Api);
  const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
  await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name: 'operator' } } });
  await rbac.createNamespacedRole({
    namespace,
    body: {
      metadata: { name: 'configmap-reader' },
      rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list'] }],
    },
  });
  await rbac.createNamespacedRoleBinding({
    namespace,
    body: {
      metadata: { name: 'operator-reads-configmaps' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'configmap-reader' },
      subjects: [{ kind: 'ServiceAccount', name: 'operator', namespace }],
    },
  });
  await core.createNamespacedConfigMap({ namespace, body: { metadata: { name: 'visible' } } });
  const issued = await core.createNamespacedServiceAccountToken({
    namespace,
    name: 'operator',
    body: { spec: { audiences: [], expirationSeconds: 3600 } },
  });
  const token = issued.status?.token;
  assert.ok(token, 'the TokenRequest API issued no token');

  const asOperator = new KubeConfig();
  asOperator.loadFromFile(await plane().kubeconfigForToken(token, 'operator'));
  const review = await asOperator.makeApiClient(AuthenticationV1Api).createSelfSubjectReview({ body: {} });
  assert.equal(review.status?.userInfo?.username, 'system:serviceaccount:default:operator');
  const operatorCore = asOperator.makeApiClient(CoreV1Api);
  const configMaps = await operatorCore.listNamespacedConfigMap({ namespace });
  assert.ok(configMaps.items.some((item) => item.metadata?.name === 'visible'));
  await assert.rejects(
    operatorCore.listNamespacedSecret({ namespace }),
    (error: unknown) => error instanceof ApiException && error.code === 403,
  );
});

test('kubeconfigForToken refuses a name that could escape its directory, and an empty token', async () => {
  await assert.rejects(plane().kubeconfigForToken('some-token', '../admin'), /must be a DNS label/);
  await assert.rejects(plane().kubeconfigForToken('', 'someone'), /empty or contains whitespace/);
});
