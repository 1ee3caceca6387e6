import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { after, before, test } from 'node:test';
import { z } from 'zod';
import { freeLoopbackPorts } from '../../src/local/controlplane/ports.ts';
import { API_SERVICE_NAME } from '../../src/tenant-api/group.ts';
import type { Installation } from '../support/installation.ts';
import { type RunningOperator, type Stack, startOperator } from '../support/operator.ts';
import { poll } from '../support/until.ts';

// The tenant API under an install's ServiceAccount (the chart's, or the plain manifests'), with only what
// the install grants: it makes its serving pair once and keeps it in a Secret, writes the CA into its
// APIService, reads the front-proxy settings, and, as the leader, names its pod address as the Service's
// one endpoint, which it takes back on stop. Call inside a describe: it installs, then runs the operator
// as that ServiceAccount with the Deployment's tenant API flags, on loopback, as the leader.

const POD_IP = '10.244.1.7';

const secretSchema = z.object({ data: z.record(z.string(), z.string()) });
const sliceSchema = z.looseObject({
  endpoints: z.array(z.looseObject({ addresses: z.array(z.string()) })).nullish(),
  ports: z.array(z.looseObject({ name: z.string(), port: z.number() })).nullish(),
  metadata: z.looseObject({ labels: z.record(z.string(), z.string()) }),
});

/** Registers the hooks and the test; returns the installation, for the caller's own tests. */
export function tenantApiUnderItsGrants<T extends Installation>(
  stack: Stack,
  install: () => Promise<T>,
  uninstall: (installed: T) => Promise<void> = async () => {},
): () => T {
  let installed: T | undefined;
  let operator: RunningOperator | undefined;
  let port: number;
  const current = (): T => {
    if (!installed) throw new Error('the installation is available only inside tests');
    return installed;
  };

  function start(): Promise<RunningOperator> {
    const { release, namespace, kubeconfigPath } = current();
    const service = `${release}-tenant-api`;
    return startOperator(stack.plane(), stack.sim(), {
      kubeconfigPath,
      flags: [
        ...['--leader-elect', 'true', '--lease-namespace', namespace, '--lease-name', release],
        ...['--tenant-api-port', String(port), '--tenant-api-bind-address', '127.0.0.1'],
        ...['--tenant-api-service', service, '--tenant-api-namespace', namespace],
        ...['--tenant-api-tls-secret', `${service}-tls`, '--tenant-api-advertise-address', POD_IP],
      ],
    });
  }

  before(async () => {
    [port = 0] = await freeLoopbackPorts(1);
    installed = await install();
    operator = await start();
  });
  after(async () => {
    await operator?.stop();
    if (installed) await uninstall(installed);
  });

  test('keeps one serving pair, trusted by the APIService, and the leader is the one endpoint', async () => {
    const client = stack.cluster().client;
    const { release, namespace } = current();
    const service = `${release}-tenant-api`;
    const secretPath = `/api/v1/namespaces/${namespace}/secrets/${service}-tls`;
    const slicePath = `/apis/discovery.k8s.io/v1/namespaces/${namespace}/endpointslices/${service}-leader`;
    const secret = await poll(
      () => client.request(secretSchema, { method: 'GET', path: secretPath }).catch(() => undefined),
      (found) => found !== undefined,
      'the serving Secret',
    );
    const ca = Buffer.from(secret?.data['ca.crt'] ?? '', 'base64').toString();
    const cert = new X509Certificate(Buffer.from(secret?.data['tls.crt'] ?? '', 'base64'));
    assert.ok(cert.verify(new X509Certificate(ca).publicKey));
    assert.match(cert.subjectAltName ?? '', new RegExp(`DNS:${service}.${namespace}.svc`));
    const apiService = await poll(
      () =>
        client.request(z.looseObject({ spec: z.looseObject({ caBundle: z.string().optional() }) }), {
          method: 'GET',
          path: `/apis/apiregistration.k8s.io/v1/apiservices/${API_SERVICE_NAME}`,
        }),
      (found) => found.spec.caBundle !== undefined,
      'the caBundle',
    );
    assert.equal(Buffer.from(apiService.spec.caBundle ?? '', 'base64').toString(), ca);

    const slice = await poll(
      () => client.request(sliceSchema, { method: 'GET', path: slicePath }).catch(() => undefined),
      (found) => (found?.endpoints?.length ?? 0) > 0,
      'the leader in the EndpointSlice',
    );
    assert.deepEqual(
      slice?.endpoints?.map((e) => e.addresses),
      [[POD_IP]],
    );
    assert.deepEqual(
      slice?.ports?.map((p) => [p.name, p.port]),
      [['https', port]],
    );
    assert.equal(slice?.metadata.labels['kubernetes.io/service-name'], service);

    // Stopped, the leader takes its address back; started again, it keeps the same pair.
    const first = operator;
    await first?.stop();
    operator = undefined;
    const emptied = await client.request(sliceSchema, { method: 'GET', path: slicePath });
    assert.deepEqual(emptied.endpoints ?? [], []);
    operator = await start();
    await poll(
      () => client.request(sliceSchema, { method: 'GET', path: slicePath }),
      (found) => (found.endpoints?.length ?? 0) > 0,
      'the leader back in the EndpointSlice',
    );
    const kept = await client.request(secretSchema, { method: 'GET', path: secretPath });
    assert.equal(kept.data['tls.crt'], secret?.data['tls.crt']);
    const denied = [...(first?.logs ?? []), ...operator.logs].filter((line) =>
      /forbidden|HTTP 403/i.test(line),
    );
    assert.deepEqual(denied, [], 'no request was forbidden');
  });

  return current;
}
