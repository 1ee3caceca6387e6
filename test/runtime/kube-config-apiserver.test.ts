// The loader's connections against a real kube-apiserver: the admin kubeconfig, an exec plugin, the
// in-cluster layout, tls-server-name, and a dropped connection pool.
import assert from 'node:assert/strict';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { load } from 'js-yaml';
import { z } from 'zod';
import { KubeApiError, KubeClient, KubeTransportError } from '../../src/kube/client.ts';
import { kubeObjectSchema } from '../../src/kube/object.ts';
import {
  inClusterConnection,
  type KubeConnection,
  kubeConnectionFromFile,
  kubeConnectionFromYaml,
} from '../../src/runtime/kube-config.ts';
import { useControlPlane } from '../support/control-plane.ts';

const plane = useControlPlane();

// The admin kubeconfig the control plane writes: one cluster with its CA, one token user.
const adminKubeconfigSchema = z.object({
  clusters: z.tuple([z.object({ cluster: z.object({ 'certificate-authority-data': z.string() }) })]),
  users: z.tuple([z.object({ user: z.object({ token: z.string() }) })]),
});

describe('kube-config connections against a real apiserver', () => {
  let dir: string;
  let admin: { ca: string; token: string; port: string };

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kube-config-apiserver-'));
    const config = adminKubeconfigSchema.parse(load(await readFile(plane().kubeconfigPath, 'utf8')));
    admin = {
      ca: Buffer.from(config.clusters[0].cluster['certificate-authority-data'], 'base64').toString('utf8'),
      token: config.users[0].user.token,
      port: new URL(plane().server).port,
    };
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  async function defaultNamespace(connection: KubeConnection): Promise<string | undefined> {
    const client = new KubeClient(connection, { requestTimeoutMs: 10_000 });
    try {
      const namespace = await client.request(kubeObjectSchema, {
        method: 'GET',
        path: '/api/v1/namespaces/default',
      });
      return namespace.metadata.name;
    } finally {
      client.resetConnections();
    }
  }

  /** A kubeconfig for the test control plane with these cluster and user fields. */
  function kubeconfigText(cluster: Record<string, unknown>, user: Record<string, unknown>): string {
    return JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        {
          name: 'local',
          cluster: {
            server: plane().server,
            'certificate-authority-data': Buffer.from(admin.ca).toString('base64'),
            ...cluster,
          },
        },
      ],
      users: [{ name: 'u', user }],
      contexts: [{ name: 'local', context: { cluster: 'local', user: 'u' } }],
      'current-context': 'local',
    });
  }

  test('the admin kubeconfig reaches the apiserver, also after the connections were dropped', async () => {
    const client = new KubeClient(await kubeConnectionFromFile(plane().kubeconfigPath));
    const get = () => client.request(kubeObjectSchema, { method: 'GET', path: '/api/v1/namespaces/default' });
    assert.equal((await get()).metadata.name, 'default');
    client.resetConnections();
    assert.equal((await get()).metadata.name, 'default');
    client.resetConnections();
  });

  test('a token from an exec plugin authenticates; a wrong one is refused', async () => {
    const script = join(dir, 'token.sh');
    await writeFile(
      script,
      '#!/bin/sh\nprintf \'{"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential","status":{"token":"%s"}}\' "$TOKEN"\n',
    );
    await chmod(script, 0o755);
    const exec = (token: string) => ({
      exec: {
        apiVersion: 'client.authentication.k8s.io/v1beta1',
        command: script,
        env: [{ name: 'TOKEN', value: token }],
      },
    });
    const good = kubeConnectionFromYaml(kubeconfigText({}, exec(admin.token)), join(dir, 'good'));
    assert.equal(await defaultNamespace(good), 'default');
    const bad = kubeConnectionFromYaml(kubeconfigText({}, exec('not-a-token')), join(dir, 'bad'));
    await assert.rejects(
      defaultNamespace(bad),
      (err: unknown) => err instanceof KubeApiError && err.status === 401,
    );
  });

  test('tls-server-name is the name the serving certificate is checked against', async () => {
    // `localhost` is not among the certificate's names: only tls-server-name can make this pass.
    const right = kubeConnectionFromYaml(
      kubeconfigText(
        { server: `https://localhost:${admin.port}`, 'tls-server-name': 'kubernetes.default.svc' },
        { token: admin.token },
      ),
      join(dir, 'right'),
    );
    assert.equal(await defaultNamespace(right), 'default');
    const wrong = kubeConnectionFromYaml(
      kubeconfigText({ 'tls-server-name': 'wrong.example.test' }, { token: admin.token }),
      join(dir, 'wrong'),
    );
    await assert.rejects(
      defaultNamespace(wrong),
      (err: unknown) => err instanceof KubeTransportError && /does not match certificate/.test(err.message),
    );
  });

  test('in-cluster: the service address, the mounted CA and token', async () => {
    const account = join(dir, 'serviceaccount');
    await mkdir(account);
    await writeFile(join(account, 'ca.crt'), admin.ca);
    await writeFile(join(account, 'token'), admin.token);
    const connection = await inClusterConnection({
      env: { KUBERNETES_SERVICE_HOST: '127.0.0.1', KUBERNETES_SERVICE_PORT: admin.port },
      serviceAccountDir: account,
    });
    assert.equal(await defaultNamespace(connection), 'default');
  });
});
