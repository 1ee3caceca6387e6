import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import type { V1Secret } from '@kubernetes/client-node';
import { FLAGS, loadConfig, type OperatorConfig } from '../../src/operator/config.ts';
import {
  ALL_ON_VALUES,
  type Manifest,
  NAMESPACE,
  RELEASE,
  type Rendered,
  renderChart,
} from './chart-render.ts';

// The operator container as the chart renders it, read by the operator's own loadConfig: proves that
// every flag the chart passes exists and parses, and that every setting of the operator is reachable
// from the chart's values.

const POD_IP = '10.1.2.3';
const scratch = await mkdtemp(join(tmpdir(), 'gpucloud-chart-config-'));
after(() => rm(scratch, { recursive: true, force: true }));

/**
 * What the kubelet would hand the container: the credentials Secret mounted where the chart mounts it
 * (under a scratch directory), and env vars with their secretKeyRefs resolved.
 */
async function containerConfig(
  rendered: Rendered,
  secrets: Record<string, Record<string, string>>,
): Promise<OperatorConfig> {
  const container = rendered.container();
  const pod = rendered.deployment().spec?.template.spec;
  const secretValue = (name: string, key: string): string => {
    const value = secrets[name]?.[key];
    assert.ok(
      value !== undefined,
      `the container reads key ${key} of Secret ${name}, which the test has not`,
    );
    return value;
  };

  let args = container.args ?? [];
  for (const mount of container.volumeMounts ?? []) {
    const secret = pod?.volumes?.find((volume) => volume.name === mount.name)?.secret;
    if (!secret?.secretName) continue;
    const dir = join(scratch, mount.name);
    await mkdir(dir, { recursive: true });
    for (const item of secret.items ?? []) {
      await writeFile(join(dir, item.path), secretValue(secret.secretName, item.key));
    }
    args = args.map((arg) => arg.replace(mount.mountPath, dir));
  }

  const env: NodeJS.ProcessEnv = {};
  for (const variable of container.env ?? []) {
    const ref = variable.valueFrom?.secretKeyRef;
    // The pod's own fields, as the kubelet fills them: this pod's address.
    const field = variable.valueFrom?.fieldRef?.fieldPath;
    env[variable.name] = ref
      ? secretValue(ref.name ?? '', ref.key)
      : field === 'status.podIP'
        ? POD_IP
        : variable.value;
  }
  return loadConfig(args, env);
}

function decodedData(secret: Manifest): Record<string, string> {
  const data = (secret as V1Secret).data ?? {};
  return Object.fromEntries(
    Object.entries(data).map(([key, value]) => [key, Buffer.from(value, 'base64').toString()]),
  );
}

describe('the operator reads the container the chart renders', () => {
  test('with the defaults: the operator defaults, the URL and key from the user-made Secret', async () => {
    const rendered = await renderChart();
    const config = await containerConfig(rendered, {
      [`${RELEASE}-credentials`]: { 'api-key': 'user-key', 'api-url': 'https://api.example' },
    });
    const operatorDefaults = loadConfig([], {
      GPUCLOUD_API_URL: 'https://api.example',
      GPUCLOUD_API_KEY: 'k',
    });
    assert.equal(config.apiUrl, 'https://api.example');
    assert.equal(config.apiKey, 'user-key');
    assert.deepEqual(config.namespace, []);
    assert.equal(config.kubeconfig, undefined);
    assert.equal(config.callbackPort, 0);
    assert.deepEqual(
      { ...config, apiKey: undefined, apiKeyFile: undefined, leaderElect: undefined },
      {
        ...operatorDefaults,
        apiKey: undefined,
        apiKeyFile: undefined,
        leaderElect: undefined,
        leaseName: RELEASE,
        leaseNamespace: NAMESPACE,
        // The pod's own address, from the downward API: what the leader advertises and its nodes name.
        tenantApiAdvertiseAddress: POD_IP,
        virtualNodeAddress: POD_IP,
      },
      'the chart defaults are the operator defaults, but for the Lease of the release and the pod address',
    );
    assert.equal(config.leaderElect, true);
  });

  test('with every option on: each value arrives as the setting it names', async () => {
    const rendered = await renderChart({ valuesFile: ALL_ON_VALUES });
    const config = await containerConfig(rendered, {
      [`${RELEASE}-credentials`]: decodedData(rendered.one('Secret')),
      'remote-cluster': { config: 'apiVersion: v1\nkind: Config\n' },
      'gpucloud-virtual-node-tls': { 'tls.crt': 'cert', 'tls.key': 'key', 'ca.crt': 'ca' },
    });
    assert.deepEqual(
      {
        ...config,
        apiKeyFile: undefined,
        kubeconfig: undefined,
        virtualNodeTlsCertFile: undefined,
        virtualNodeTlsKeyFile: undefined,
        virtualNodeClientCaFile: undefined,
      },
      {
        apiUrl: 'https://api.gpucloud.example',
        apiKeyFile: undefined,
        apiKey: 'test-api-key',
        namespace: ['gpu-workloads'],
        kubeconfig: undefined,
        context: 'workload-cluster',
        leaderElect: true,
        leaseName: 'gpucloud-leader',
        leaseNamespace: 'gpucloud-leases',
        leaseDurationSeconds: 30,
        renewDeadlineSeconds: 20,
        retryPeriodSeconds: 4,
        healthPort: 9090,
        callbackPort: 9443,
        callbackBaseUrl: 'https://callbacks.gpucloud.example/hooks',
        callbackToken: 'test-callback-token-0123456789abcdef',
        callbackBindAddress: '0.0.0.0',
        concurrency: 8,
        pollIntervalSeconds: 15,
        apiRequestsPerSecond: 20,
        apiTimeoutSeconds: 45,
        detailsCallsPerSecond: 1,
        detailsIntervalSeconds: 600,
        idleChecksPerSecond: 3,
        idleCheckIntervalSeconds: 120,
        queueIntervalSeconds: 20,
        resyncMinutes: 30,
        secretIntervalSeconds: 45,
        defaultAdoption: false,
        logLevel: 'debug',
        tenantApiPort: 9444,
        tenantApiBindAddress: '0.0.0.0',
        tenantApiCertFile: undefined,
        tenantApiKeyFile: undefined,
        tenantApiTlsSecret: `${RELEASE}-tenant-api-tls`,
        tenantApiAdvertiseAddress: POD_IP,
        tenantApiService: `${RELEASE}-tenant-api`,
        tenantApiNamespace: NAMESPACE,
        tenantApiRequestsPerSecond: 3,
        tenantApiStreamsPerUser: 4,
        tenantApiStreamsPerAccount: 20,
        virtualNodes: true,
        virtualNodeAddress: POD_IP,
        virtualNodePorts: { first: 10251, last: 10253 },
        virtualNodeTlsCertFile: undefined,
        virtualNodeTlsKeyFile: undefined,
        virtualNodeClientCaFile: undefined,
      },
    );
    assert.match(config.kubeconfig ?? '', /\/kubeconfig\/kubeconfig$/);
    // The kubelet API's three files come from the Secret the values name, mounted where the flags point.
    const files = ['TlsCertFile', 'TlsKeyFile', 'ClientCaFile'] as const;
    const paths = files.map((file) => config[`virtualNode${file}`]);
    assert.deepEqual(
      paths.map((path) => path?.split('/').at(-1)),
      ['tls.crt', 'tls.key', 'ca.crt'],
    );
  });

  test('every operator setting has a chart value: all-on sets each flag or its variable', async () => {
    // The tenant API's pair comes from the operator's Secret or, with cert-manager, from files: one
    // rendering cannot set both, so the cert-manager one adds its two flags.
    const containers = [
      (await renderChart({ valuesFile: ALL_ON_VALUES })).container(),
      (
        await renderChart({
          valuesFile: ALL_ON_VALUES,
          values: { tenantApi: { enabled: true, certManager: { enabled: true, issuerRef: { name: 'ca' } } } },
        })
      ).container(),
    ];
    const flags = new Set(
      containers.flatMap((container) => (container.args ?? []).map((arg) => /^--([^=]+)=/.exec(arg)?.[1])),
    );
    const variables = new Set(
      containers.flatMap((container) => (container.env ?? []).map((variable) => variable.name)),
    );
    const missing = Object.entries(FLAGS)
      .filter(([, { flag, env }]) => !flags.has(flag) && !variables.has(env))
      .map(([setting]) => setting);
    assert.deepEqual(missing, [], 'settings the chart cannot set');
  });
});
