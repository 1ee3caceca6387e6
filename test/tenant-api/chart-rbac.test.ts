import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { z } from 'zod';
import { freeLoopbackPorts } from '../../src/local/controlplane/ports.ts';
import { API_SERVICE_NAME } from '../../src/tenant-api/group.ts';
import { type InstalledChart, installChart } from '../support/chart.ts';
import { type RunningOperator, startOperator, useStack } from '../support/operator.ts';
import { poll } from '../support/until.ts';

// The tenant API under the chart's ServiceAccount, with only what the chart grants: it makes its serving
// pair once and keeps it in a Secret, writes the CA into its APIService, reads the front-proxy settings,
// and, as the leader, names its pod address as the Service's one endpoint, which it takes back on stop.
const stack = useStack();
const POD_IP = '10.244.1.7';
let chart: InstalledChart;
let operator: RunningOperator | undefined;
let port: number;

const secretSchema = z.object({ data: z.record(z.string(), z.string()) });
const sliceSchema = z.looseObject({
  endpoints: z.array(z.looseObject({ addresses: z.array(z.string()) })).nullish(),
  ports: z.array(z.looseObject({ name: z.string(), port: z.number() })).nullish(),
  metadata: z.looseObject({ labels: z.record(z.string(), z.string()) }),
});

function start(): Promise<RunningOperator> {
  const service = `${chart.release}-tenant-api`;
  return startOperator(stack.plane(), stack.sim(), {
    kubeconfigPath: chart.kubeconfigPath,
    flags: [
      ...['--leader-elect', 'true', '--lease-namespace', chart.namespace, '--lease-name', chart.release],
      ...['--tenant-api-port', String(port), '--tenant-api-bind-address', '127.0.0.1'],
      ...['--tenant-api-service', service, '--tenant-api-namespace', chart.namespace],
      ...['--tenant-api-tls-secret', `${service}-tls`, '--tenant-api-advertise-address', POD_IP],
    ],
  });
}

describe("the tenant API under the chart's ServiceAccount", () => {
  before(async () => {
    [port = 0] = await freeLoopbackPorts(1);
    chart = await installChart(stack.plane(), { values: { tenantApi: { enabled: true } } });
    operator = await start();
  });
  after(async () => {
    await operator?.stop();
    await chart?.uninstall();
  });

  test('the install notes say how tenants use it, and what one replica without a budget risks', () => {
    assert.match(chart.notes, /Tenant API: tenants with the view role read logs, metrics and tasks/);
    assert.match(chart.notes, /this release has\s+1 replica\(s\) and no PodDisruptionBudget/);
  });

  test('keeps one serving pair, trusted by the APIService, and the leader is the one endpoint', async () => {
    const client = stack.cluster().client;
    const service = `${chart.release}-tenant-api`;
    const secretPath = `/api/v1/namespaces/${chart.namespace}/secrets/${service}-tls`;
    const slicePath = `/apis/discovery.k8s.io/v1/namespaces/${chart.namespace}/endpointslices/${service}-leader`;
    const secret = await poll(
      () => client.request(secretSchema, { method: 'GET', path: secretPath }).catch(() => undefined),
      (found) => found !== undefined,
      'the serving Secret',
    );
    const ca = Buffer.from(secret?.data['ca.crt'] ?? '', 'base64').toString();
    const cert = new X509Certificate(Buffer.from(secret?.data['tls.crt'] ?? '', 'base64'));
    assert.ok(cert.verify(new X509Certificate(ca).publicKey));
    assert.match(cert.subjectAltName ?? '', new RegExp(`DNS:${service}.${chart.namespace}.svc`));
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
});
