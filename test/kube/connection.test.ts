// Connections to a real kube-apiserver: kubeconfigs as client-node reads them (tokens, exec plugins, an
// auth provider, merged $KUBECONFIG files, contexts, impersonation, a proxy, tls-server-name) and the
// service-account path a pod takes.
import assert from 'node:assert/strict';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { load } from 'js-yaml';
import { z } from 'zod';
import { KubeApiError, KubeClient, KubeTransportError } from '../../src/kube/client.ts';
import { KubeConfigError, type KubeConnection, loadKubeConnection } from '../../src/kube/connection.ts';
import { inClusterConnection, SERVICE_ACCOUNT_DIR_ENV } from '../../src/kube/in-cluster.ts';
import { kubeconfigConnection } from '../../src/kube/kubeconfig.ts';
import { kubeObjectSchema } from '../../src/kube/object.ts';
import { collectionPath, configMaps } from '../../src/kube/resource-type.ts';
import { useControlPlane } from '../support/control-plane.ts';
import { createConfigMap, createNamespace } from '../support/kube.ts';

const plane = useControlPlane();

// The admin kubeconfig the control plane writes: one cluster with its CA, one token user.
const adminKubeconfigSchema = z.object({
  clusters: z.tuple([z.object({ cluster: z.object({ 'certificate-authority-data': z.string() }) })]),
  users: z.tuple([z.object({ user: z.object({ token: z.string() }) })]),
});

const watchEventSchema = z.object({ type: z.string(), object: kubeObjectSchema });

const reviewSchema = z.object({ status: z.object({ userInfo: z.object({ username: z.string() }) }) });

let dir: string;
let admin: { ca: string; token: string; port: string };

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

/** Who the apiserver takes the connection's user for. */
async function whoAmI(connection: KubeConnection): Promise<string> {
  const client = new KubeClient(connection, { requestTimeoutMs: 10_000 });
  try {
    const review = await client.request(reviewSchema, {
      method: 'POST',
      path: '/apis/authentication.k8s.io/v1/selfsubjectreviews',
      body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
    });
    return review.status.userInfo.username;
  } finally {
    client.resetConnections();
  }
}

const cluster = (fields: Record<string, unknown> = {}) => ({
  server: plane().server,
  'certificate-authority-data': Buffer.from(admin.ca).toString('base64'),
  ...fields,
});

/** Writes a kubeconfig and answers its path. */
async function kubeconfig(name: string, config: Record<string, unknown>): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, JSON.stringify({ apiVersion: 'v1', kind: 'Config', ...config }));
  return path;
}

function single(name: string, clusterFields: Record<string, unknown>, user: Record<string, unknown>) {
  return kubeconfig(name, {
    clusters: [{ name: 'local', cluster: cluster(clusterFields) }],
    users: [{ name: 'u', user }],
    contexts: [{ name: 'local', context: { cluster: 'local', user: 'u', namespace: 'team-a' } }],
    'current-context': 'local',
  });
}

async function script(name: string, body: string): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, `#!/bin/sh\n${body}\n`);
  await chmod(path, 0o755);
  return path;
}

describe('connections to a real apiserver', () => {
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kube-connection-'));
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

  test('a token user, with the context namespace as the default namespace', async () => {
    const connection = kubeconfigConnection(await single('token', {}, { token: admin.token }));
    assert.equal(await defaultNamespace(connection), 'default');
    assert.equal(connection.namespace, 'team-a');
  });

  test('a token from an exec plugin authenticates; a wrong one is refused', async () => {
    const command = await script(
      'exec.sh',
      'printf \'{"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential","status":{"token":"%s"}}\' "$TOKEN"',
    );
    const exec = (token: string) => ({
      exec: {
        apiVersion: 'client.authentication.k8s.io/v1beta1',
        command,
        env: [{ name: 'TOKEN', value: token }],
      },
    });
    assert.equal(
      await defaultNamespace(kubeconfigConnection(await single('exec-good', {}, exec(admin.token)))),
      'default',
    );
    const bad = kubeconfigConnection(await single('exec-bad', {}, exec('not-a-token')));
    await assert.rejects(
      defaultNamespace(bad),
      (err: unknown) => err instanceof KubeApiError && err.status === 401,
    );
  });

  test('an auth provider (gcp, with cmd-path) authenticates for real', async () => {
    const command = await script(
      'gcloud.sh',
      `printf '{"access_token":"${admin.token}","token_expiry":"2999-01-01T00:00:00Z"}'`,
    );
    const user = {
      'auth-provider': {
        name: 'gcp',
        config: { 'cmd-path': command, 'token-key': '{.access_token}', 'expiry-key': '{.token_expiry}' },
      },
    };
    assert.equal(await defaultNamespace(kubeconfigConnection(await single('gcp', {}, user))), 'default');
  });

  test('a second $KUBECONFIG file is merged: the cluster in one, the user and context in the other', async () => {
    const clusters = await kubeconfig('clusters', {
      clusters: [{ name: 'local', cluster: cluster() }],
      contexts: [{ name: 'local', context: { cluster: 'local', user: 'u' } }],
      'current-context': 'local',
    });
    const users = await kubeconfig('users', { users: [{ name: 'u', user: { token: admin.token } }] });
    const connection = await loadKubeConnection({ env: { KUBECONFIG: [clusters, users].join(delimiter) } });
    assert.equal(await defaultNamespace(connection), 'default');
  });

  test('--context picks a context other than the current one, and an unknown one is a clear error', async () => {
    const path = await kubeconfig('contexts', {
      clusters: [
        { name: 'local', cluster: cluster() },
        { name: 'nowhere', cluster: { server: 'https://127.0.0.1:1' } },
      ],
      users: [{ name: 'u', user: { token: admin.token } }],
      contexts: [
        { name: 'broken', context: { cluster: 'nowhere', user: 'u' } },
        { name: 'local', context: { cluster: 'local', user: 'u' } },
      ],
      'current-context': 'broken',
    });
    assert.equal(await defaultNamespace(kubeconfigConnection(path, 'local')), 'default');
    assert.throws(
      () => kubeconfigConnection(path, 'missing'),
      (err: unknown) => err instanceof KubeConfigError && /no context named "missing"/.test(err.message),
    );
  });

  test('as: impersonation reaches the apiserver as the impersonated user', async () => {
    const connection = kubeconfigConnection(await single('as', {}, { token: admin.token, as: 'tenant-x' }));
    assert.equal(await whoAmI(connection), 'tenant-x');
  });

  test('proxy-url: every request goes through the proxy', async () => {
    const tunnels: string[] = [];
    const proxy: Server = createServer();
    proxy.on('connect', (request, socket, head) => {
      tunnels.push(request.url ?? '');
      const [host, port] = (request.url ?? '').split(':');
      const upstream = connect(Number(port), host ?? '127.0.0.1', () => {
        socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
        upstream.write(head);
        upstream.pipe(socket);
        socket.pipe(upstream);
      });
      upstream.on('error', () => socket.destroy());
      socket.on('error', () => upstream.destroy());
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    try {
      const address = proxy.address();
      assert.ok(address && typeof address === 'object');
      const path = await single(
        'proxied',
        { 'proxy-url': `http://127.0.0.1:${address.port}` },
        { token: admin.token },
      );
      assert.equal(await defaultNamespace(kubeconfigConnection(path)), 'default');
      assert.deepEqual(tunnels, [`127.0.0.1:${admin.port}`]);
    } finally {
      proxy.closeAllConnections();
      await new Promise<void>((resolve) => proxy.close(() => resolve()));
    }
  });

  test('tls-server-name is the name the serving certificate is checked against', async () => {
    // `localhost` is not among the certificate's names: only tls-server-name can make this pass.
    const right = await single(
      'tls-right',
      { server: `https://localhost:${admin.port}`, 'tls-server-name': 'kubernetes.default.svc' },
      { token: admin.token },
    );
    assert.equal(await defaultNamespace(kubeconfigConnection(right)), 'default');
    const wrong = await single(
      'tls-wrong',
      { 'tls-server-name': 'wrong.example.test' },
      { token: admin.token },
    );
    await assert.rejects(
      defaultNamespace(kubeconfigConnection(wrong)),
      (err: unknown) => err instanceof KubeTransportError && /does not match certificate/.test(err.message),
    );
  });

  test('in a pod: the service address, the mounted CA and token, from the directory the variable names', async () => {
    const account = join(dir, 'serviceaccount');
    await mkdir(account);
    await writeFile(join(account, 'ca.crt'), admin.ca);
    await writeFile(join(account, 'token'), admin.token);
    const env = {
      KUBERNETES_SERVICE_HOST: '127.0.0.1',
      KUBERNETES_SERVICE_PORT: admin.port,
      [SERVICE_ACCOUNT_DIR_ENV]: account,
    };
    const connection = await loadKubeConnection({ env, homeDir: dir });
    assert.equal(connection.source, 'in-cluster');
    assert.equal(await defaultNamespace(connection), 'default');
    await assert.rejects(
      inClusterConnection({ env: { KUBERNETES_SERVICE_PORT: admin.port } }),
      (err: unknown) => err instanceof KubeConfigError && /KUBERNETES_SERVICE_HOST/.test(err.message),
    );
  });

  test('a starting client: its concurrent first requests all succeed on one credential load', async () => {
    // The exec plugin counts its runs: each load of the credentials is one run.
    const runs = join(dir, 'exec-runs');
    const command = await script(
      'exec-counted.sh',
      `echo run >> "${runs}"\nprintf '{"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential","status":{"token":"%s"}}' "$TOKEN"`,
    );
    const user = {
      exec: {
        apiVersion: 'client.authentication.k8s.io/v1beta1',
        command,
        env: [{ name: 'TOKEN', value: admin.token }],
      },
    };
    const client = new KubeClient(kubeconfigConnection(await single('exec-counted', {}, user)), {
      requestTimeoutMs: 10_000,
    });
    try {
      // As an operator starts: every informer lists at once, before any credentials are cached.
      const names = await Promise.all(
        Array.from({ length: 20 }, () =>
          client
            .request(kubeObjectSchema, { method: 'GET', path: '/api/v1/namespaces/default' })
            .then((namespace) => namespace.metadata.name),
        ),
      );
      assert.deepEqual(new Set(names), new Set(['default']));
      assert.equal((await readFile(runs, 'utf8')).split('\n').filter(Boolean).length, 1, 'one plugin run');
    } finally {
      client.resetConnections();
    }
  });

  test('new TLS material: new requests use it, and a watch open on the old one goes on', async () => {
    const base = plane().connection;
    let tls = (await base.auth()).tls;
    const connection: KubeConnection = {
      server: base.server,
      source: base.source,
      auth: async () => ({ ...(await base.auth()), tls }),
    };
    const client = new KubeClient(connection, { requestTimeoutMs: 10_000 });
    const namespace = await createNamespace(client, 'tls-change');
    const controller = new AbortController();
    try {
      await createConfigMap(client, namespace, 'before');
      const events = client.watch(
        collectionPath(configMaps, namespace),
        { timeoutSeconds: 60 },
        controller.signal,
      );
      const named = async () => {
        const { value } = await events.next();
        return watchEventSchema.parse(value).object.metadata.name;
      };
      assert.equal(await named(), 'before', 'the watch is open');
      tls = { ...tls }; // the same content in a new object: what a rotated client certificate looks like
      await createConfigMap(client, namespace, 'after');
      assert.equal(await named(), 'after', 'the watch opened before the change still delivers');
    } finally {
      controller.abort();
      client.resetConnections();
    }
  });

  test('a kubeconfig that cannot be read is an error that quotes none of it', async () => {
    const path = join(dir, 'broken');
    await writeFile(path, `users:\n- name: u\n  user: {token: ${admin.token}\n`);
    assert.throws(
      () => kubeconfigConnection(path),
      (err: unknown) => err instanceof KubeConfigError && !err.message.includes(admin.token),
    );
  });
});
