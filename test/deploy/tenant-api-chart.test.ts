import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { V1ClusterRole, V1RoleBinding, V1Service } from '@kubernetes/client-node';
import { API_SERVICE_NAME, TENANT_GROUP } from '../../src/tenant-api/group.ts';
import { tenantClusterRoles } from '../../src/tenant-api/rbac.ts';
import { HelmError } from '../../tools/helm/helm.ts';
import { type Manifest, NAMESPACE, RELEASE, renderChart } from './chart-render.ts';

// The chart's tenant API: off unless asked for (an APIService whose server is down holds namespace
// deletion: test/tenant-api/operator-down.test.ts), and, when on, what an extension server needs.
const ON = { tenantApi: { enabled: true }, replicaCount: 2, podDisruptionBudget: { enabled: true } };
const SERVICE = `${RELEASE}-tenant-api`;

describe('the tenant API in the chart', async () => {
  const off = await renderChart();
  const on = await renderChart({ values: ON });

  test('is off by default: no APIService, no Service, no tenant grants', () => {
    assert.equal(off.all('APIService').length, 0);
    assert.ok(!off.text.includes(TENANT_GROUP));
    assert.ok(!off.container().args?.some((arg) => arg.startsWith('--tenant-api')));
  });

  test('renders the same manifests every time: no certificate in them, so Argo CD stays Synced', async () => {
    const again = await renderChart({ values: ON });
    assert.equal(again.text, on.text);
    const apiService = on.one('APIService', API_SERVICE_NAME) as Manifest & {
      spec: { caBundle?: string; service: { name: string; namespace: string; port: number } };
    };
    assert.equal(apiService.spec.caBundle, undefined);
    assert.deepEqual(apiService.spec.service, { name: SERVICE, namespace: NAMESPACE, port: 443 });
    assert.equal(on.all('Secret').length, 0);
  });

  test('a Service without a selector, whose endpoint the leader writes; the pod knows its address', () => {
    const service = on.one<V1Service & Manifest>('Service', SERVICE);
    assert.equal(service.spec?.selector, undefined);
    assert.deepEqual(service.spec?.ports, [{ name: 'https', port: 443, targetPort: 8443, protocol: 'TCP' }]);
    const container = on.container();
    for (const arg of [
      '--tenant-api-port=8443',
      `--tenant-api-service=${SERVICE}`,
      `--tenant-api-namespace=${NAMESPACE}`,
      `--tenant-api-tls-secret=${SERVICE}-tls`,
    ]) {
      assert.ok(container.args?.includes(arg), arg);
    }
    assert.deepEqual(
      container.env?.find((env) => env.name === 'POD_IP')?.valueFrom?.fieldRef?.fieldPath,
      'status.podIP',
    );
    assert.ok(container.ports?.some((port) => port.name === 'https-tenant' && port.containerPort === 8443));
  });

  test('the ClusterRoles aggregating into view and edit are those of src/tenant-api/rbac.ts', () => {
    for (const expected of tenantClusterRoles(RELEASE)) {
      const role = on.one<V1ClusterRole & Manifest>('ClusterRole', expected.metadata.name);
      for (const [label, value] of Object.entries(expected.metadata.labels)) {
        assert.equal(role.metadata?.labels?.[label], value, label);
      }
      assert.deepEqual(role.rules, expected.rules);
    }
  });

  test('an extension server rights: auth-delegator, the authentication reader, its endpoint, its Secret, its APIService', () => {
    const delegator = on.one('ClusterRoleBinding', `${RELEASE}-tenant-api-auth-delegator`) as Manifest &
      V1RoleBinding;
    assert.equal(delegator.roleRef.name, 'system:auth-delegator');
    const reader = on.one<V1RoleBinding & Manifest>('RoleBinding', `${RELEASE}-tenant-api-auth-reader`);
    assert.equal(reader.metadata?.namespace, 'kube-system');
    assert.equal(reader.roleRef.name, 'extension-apiserver-authentication-reader');
    const own = on.one<V1ClusterRole & Manifest>('Role', `${RELEASE}-tenant-api`);
    assert.deepEqual(own.rules, [
      { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['create'] },
      {
        apiGroups: ['discovery.k8s.io'],
        resources: ['endpointslices'],
        resourceNames: [`${SERVICE}-leader`],
        verbs: ['get', 'update'],
      },
      { apiGroups: [''], resources: ['secrets'], verbs: ['create'] },
      { apiGroups: [''], resources: ['secrets'], resourceNames: [`${SERVICE}-tls`], verbs: ['get'] },
    ]);
    const ca = on.one<V1ClusterRole & Manifest>('ClusterRole', `${RELEASE}-tenant-api-ca`);
    assert.deepEqual(ca.rules, [
      {
        apiGroups: ['apiregistration.k8s.io'],
        resources: ['apiservices'],
        resourceNames: [API_SERVICE_NAME],
        verbs: ['get', 'patch'],
      },
    ]);
  });

  test('the NetworkPolicy lets in the tenant API port, from the peers given', async () => {
    const peers = [{ ipBlock: { cidr: '10.0.0.0/24' } }];
    const rendered = await renderChart({ values: { ...ON, networkPolicy: { tenantApiFrom: peers } } });
    // As YAML has it (`from`; client-node's type calls it `_from`).
    const policy = rendered.one('NetworkPolicy') as Manifest & {
      spec: { ingress: Array<{ ports?: Array<{ port: unknown }>; from?: unknown }> };
    };
    const rule = policy.spec.ingress.find((each) => each.ports?.some((port) => port.port === 'https-tenant'));
    assert.deepEqual(rule?.from, peers);
  });

  test('with cert-manager: a Certificate, its CA injected into the APIService, the pair mounted', async () => {
    const rendered = await renderChart({
      values: {
        ...ON,
        tenantApi: { enabled: true, certManager: { enabled: true, issuerRef: { name: 'ca' } } },
      },
    });
    const certificate = rendered.one('Certificate', SERVICE) as Manifest & {
      spec: { secretName: string; dnsNames: string[] };
    };
    assert.equal(certificate.spec.secretName, `${SERVICE}-tls`);
    assert.ok(certificate.spec.dnsNames.includes(`${SERVICE}.${NAMESPACE}.svc`));
    assert.equal(
      rendered.one('APIService').metadata?.annotations?.['cert-manager.io/inject-ca-from'],
      `${NAMESPACE}/${SERVICE}`,
    );
    const args = rendered.container().args ?? [];
    assert.ok(args.includes('--tenant-api-cert-file=/var/run/secrets/gpucloud.io/tenant-api/tls.crt'));
    assert.ok(!args.some((arg) => arg.startsWith('--tenant-api-tls-secret')));
    assert.equal(
      rendered.all('ClusterRole').filter((r) => r.metadata?.name === `${RELEASE}-tenant-api-ca`).length,
      0,
    );
    const failure = await renderChart({
      values: { tenantApi: { enabled: true, certManager: { enabled: true } } },
    }).catch((error: unknown) => error);
    assert.ok(failure instanceof HelmError);
    assert.match(failure.stderr, /issuerRef.name/);
  });
});
