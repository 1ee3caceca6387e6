import assert from 'node:assert/strict';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  inClusterConnection,
  KubeConfigError,
  KubeCredentialError,
  kubeConnectionFromFile,
  loadKubeConnection,
} from '../../src/runtime/kube-config.ts';
import { until } from '../support/until.ts';

const CA = '-----BEGIN CERTIFICATE-----\nca\n-----END CERTIFICATE-----\n';
const CERT = '-----BEGIN CERTIFICATE-----\nclient\n-----END CERTIFICATE-----\n';
const KEY = '-----BEGIN PRIVATE KEY-----\nkey\n-----END PRIVATE KEY-----\n';
const b64 = (text: string) => Buffer.from(text).toString('base64');

let dir: string;
let files = 0;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kube-config-test-'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

interface Parts {
  cluster?: Record<string, unknown>;
  user?: Record<string, unknown>;
  currentContext?: string | null;
}

/** A kubeconfig in its own directory (for relative paths), as YAML the way kubectl writes it. */
async function kubeconfig(parts: Parts): Promise<{ path: string; home: string }> {
  const home = join(dir, `config-${++files}`);
  await mkdir(home, { recursive: true });
  const cluster = {
    server: 'https://api.example.test:6443',
    'certificate-authority-data': b64(CA),
    ...parts.cluster,
  };
  const lines = [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    '- name: c',
    '  cluster:',
    ...Object.entries(cluster).map(([k, v]) => `    ${k}: ${JSON.stringify(v)}`),
    'users:',
    '- name: u',
    `  user: ${JSON.stringify(parts.user ?? {})}`,
    'contexts:',
    '- name: ctx',
    '  context: {cluster: c, user: u, namespace: default}',
    ...(parts.currentContext === null ? [] : [`current-context: ${parts.currentContext ?? 'ctx'}`]),
  ];
  const path = join(home, 'config');
  await writeFile(path, `${lines.join('\n')}\n`);
  return { path, home };
}

async function rejectsWithField(promise: Promise<unknown>, field: string, message?: RegExp): Promise<void> {
  await assert.rejects(promise, (err: unknown) => {
    assert.ok(err instanceof KubeConfigError, `a KubeConfigError, got ${String(err)}`);
    assert.equal(err.field, field);
    if (message) assert.match(err.message, message);
    return true;
  });
}

describe('kubeconfig', () => {
  test('a token user: server, CA and Authorization header', async () => {
    const { path } = await kubeconfig({ user: { token: 'static-token' } });
    const connection = await kubeConnectionFromFile(path);
    assert.equal(connection.server, 'https://api.example.test:6443');
    const auth = await connection.auth();
    assert.deepEqual(auth.headers, { authorization: 'Bearer static-token' });
    assert.deepEqual(auth.tls, { ca: CA, rejectUnauthorized: true });
  });

  test('insecure-skip-tls-verify and tls-server-name reach the TLS settings', async () => {
    const { path } = await kubeconfig({
      cluster: { 'insecure-skip-tls-verify': true, 'tls-server-name': 'kubernetes.default.svc' },
    });
    const { tls, headers } = await (await kubeConnectionFromFile(path)).auth();
    assert.equal(tls.rejectUnauthorized, false);
    assert.equal(tls.servername, 'kubernetes.default.svc');
    assert.deepEqual(headers, {}, 'a user without credentials is anonymous');
  });

  test('a tokenFile relative to the kubeconfig is read', async () => {
    const { path, home } = await kubeconfig({ user: { tokenFile: 'secrets/token' } });
    await mkdir(join(home, 'secrets'));
    await writeFile(join(home, 'secrets', 'token'), 'file-token\n');
    const auth = await (await kubeConnectionFromFile(path)).auth();
    assert.deepEqual(auth.headers, { authorization: 'Bearer file-token' });
  });

  test('client certificate and key as data', async () => {
    const { path } = await kubeconfig({
      user: { 'client-certificate-data': b64(CERT), 'client-key-data': b64(KEY) },
    });
    const { tls, headers } = await (await kubeConnectionFromFile(path)).auth();
    assert.deepEqual(tls, { ca: CA, cert: CERT, key: KEY, rejectUnauthorized: true });
    assert.deepEqual(headers, {});
  });

  test('CA, client certificate and key as files relative to the kubeconfig', async () => {
    const { path, home } = await kubeconfig({
      cluster: { 'certificate-authority-data': '', 'certificate-authority': 'pki/ca.crt' },
      user: { 'client-certificate': 'pki/client.crt', 'client-key': join(dir, 'absolute.key') },
    });
    await mkdir(join(home, 'pki'));
    await writeFile(join(home, 'pki', 'ca.crt'), CA);
    await writeFile(join(home, 'pki', 'client.crt'), CERT);
    await writeFile(join(dir, 'absolute.key'), KEY);
    const { tls } = await (await kubeConnectionFromFile(path)).auth();
    assert.deepEqual(tls, { ca: CA, cert: CERT, key: KEY, rejectUnauthorized: true });
  });

  test('a missing file named in the kubeconfig is an error naming the field', async () => {
    const { path } = await kubeconfig({
      user: { 'client-certificate': 'nope.crt', 'client-key': 'nope.key' },
    });
    await rejectsWithField(kubeConnectionFromFile(path), 'users[u].user.client-certificate', /nope\.crt/);
  });

  test('a certificate without a key is refused', async () => {
    const { path } = await kubeconfig({ user: { 'client-certificate-data': b64(CERT) } });
    await rejectsWithField(kubeConnectionFromFile(path), 'users[u].user.client-key');
  });

  test('no current-context is a clear error', async () => {
    const { path } = await kubeconfig({ currentContext: null });
    await rejectsWithField(kubeConnectionFromFile(path), 'current-context', /not set/);
  });

  test('a current-context naming no context is a clear error', async () => {
    const { path } = await kubeconfig({ currentContext: 'elsewhere' });
    await rejectsWithField(kubeConnectionFromFile(path), 'current-context', /"elsewhere"/);
  });

  test('an auth-provider is refused by name rather than ignored', async () => {
    const { path } = await kubeconfig({ user: { 'auth-provider': { name: 'oidc', config: {} } } });
    await rejectsWithField(kubeConnectionFromFile(path), 'users[u].user.auth-provider', /not supported/);
  });

  test('a proxy-url is refused by name rather than ignored', async () => {
    const { path } = await kubeconfig({ cluster: { 'proxy-url': 'http://proxy:3128' } });
    await rejectsWithField(kubeConnectionFromFile(path), 'clusters[c].cluster.proxy-url');
  });

  test('a malformed field is named', async () => {
    const { path } = await kubeconfig({ cluster: { 'insecure-skip-tls-verify': 'yes please' } });
    await rejectsWithField(kubeConnectionFromFile(path), 'clusters[c].cluster.insecure-skip-tls-verify');
  });

  test('invalid YAML is reported by line, without quoting the file', async () => {
    const path = join(dir, 'broken.yaml');
    await writeFile(path, 'users:\n- name: u\n  user: {token: secret-token\n');
    await assert.rejects(kubeConnectionFromFile(path), (err: unknown) => {
      assert.ok(err instanceof KubeConfigError);
      assert.equal(err.field, 'file');
      assert.match(err.message, /not valid YAML at line \d+/);
      assert.doesNotMatch(err.message, /secret-token/);
      return true;
    });
  });

  test('an unreadable kubeconfig names its path', async () => {
    await rejectsWithField(kubeConnectionFromFile(join(dir, 'absent')), 'file', /ENOENT/);
  });
});

describe('exec plugin', () => {
  /** A plugin counting its runs; its credential expires `ttl` seconds after it was issued. */
  async function plugin(home: string, ttl: number): Promise<string> {
    const script = join(home, 'bin', 'credential.sh');
    await mkdir(join(home, 'bin'));
    await writeFile(
      script,
      [
        '#!/bin/sh',
        'n=$(cat "$COUNT_FILE" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "$COUNT_FILE"',
        'echo "$KUBERNETES_EXEC_INFO" > "$COUNT_FILE.info"',
        `expiry=$(date -u -d "@$(( $(date +%s) + ${ttl} ))" +%Y-%m-%dT%H:%M:%SZ)`,
        'printf \'{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",' +
          '"status":{"token":"%s-%s","expirationTimestamp":"%s"}}\' "$1" "$n" "$expiry"',
      ].join('\n'),
    );
    await chmod(script, 0o755);
    return script;
  }

  test('runs the command with args and env, caches until expiry, then runs it again', async () => {
    const countFile = join(dir, 'exec-count');
    const { path, home } = await kubeconfig({
      user: {
        exec: {
          apiVersion: 'client.authentication.k8s.io/v1',
          // Relative to the kubeconfig, as kubectl resolves it.
          command: './bin/credential.sh',
          args: ['exec-token'],
          env: [{ name: 'COUNT_FILE', value: countFile }],
          interactiveMode: 'Never',
        },
      },
    });
    await plugin(home, 1);
    const connection = await kubeConnectionFromFile(path);
    const first = await connection.auth();
    assert.deepEqual(first.headers, { authorization: 'Bearer exec-token-1' });
    const [again, concurrent] = await Promise.all([connection.auth(), connection.auth()]);
    assert.deepEqual(again.headers, first.headers, 'cached while unexpired');
    assert.deepEqual(concurrent.headers, first.headers);
    assert.equal((await readFile(countFile, 'utf8')).trim(), '1');
    const info = JSON.parse(await readFile(`${countFile}.info`, 'utf8'));
    assert.deepEqual(info, {
      apiVersion: 'client.authentication.k8s.io/v1',
      kind: 'ExecCredential',
      spec: { interactive: false },
    });
    await until(
      async () => (await connection.auth()).headers.authorization === 'Bearer exec-token-2',
      'the plugin to run again after expiry',
      5_000,
    );
    assert.equal((await readFile(countFile, 'utf8')).trim(), '2');
  });

  test('client certificates from v1beta1 keep one TLS object while unchanged', async () => {
    const script = join(dir, 'cert.sh');
    const credential = {
      apiVersion: 'client.authentication.k8s.io/v1beta1',
      kind: 'ExecCredential',
      status: {
        clientCertificateData: CERT,
        clientKeyData: KEY,
        expirationTimestamp: '2000-01-01T00:00:00Z',
      },
    };
    await writeFile(script, `#!/bin/sh\ncat <<'EOF'\n${JSON.stringify(credential)}\nEOF\n`);
    await chmod(script, 0o755);
    const { path } = await kubeconfig({
      user: { exec: { apiVersion: 'client.authentication.k8s.io/v1beta1', command: script } },
    });
    const connection = await kubeConnectionFromFile(path);
    const first = await connection.auth();
    assert.deepEqual(first.headers, {});
    assert.deepEqual(first.tls, { ca: CA, cert: CERT, key: KEY, rejectUnauthorized: true });
    // Expired at once, so it runs again, but the same certificate must not drop the connection pool.
    assert.equal((await connection.auth()).tls, first.tls);
  });

  test('a failing command is named, and what it printed stays out of the error', async () => {
    const script = join(dir, 'fail.sh');
    await writeFile(script, '#!/bin/sh\necho \'{"status":{"token":"leaked-secret"}}\'\nexit 3\n');
    await chmod(script, 0o755);
    const { path } = await kubeconfig({
      user: { exec: { apiVersion: 'client.authentication.k8s.io/v1', command: script } },
    });
    const connection = await kubeConnectionFromFile(path);
    await assert.rejects(connection.auth(), (err: unknown) => {
      assert.ok(err instanceof KubeCredentialError);
      assert.match(err.message, /fail\.sh/);
      assert.match(err.message, /code 3/);
      assert.doesNotMatch(err.message, /leaked-secret/);
      assert.doesNotMatch(String(err.cause ?? ''), /leaked-secret/);
      return true;
    });
  });

  test('an invalid ExecCredential is reported by path, without its values', async () => {
    const script = join(dir, 'bad.sh');
    await writeFile(
      script,
      '#!/bin/sh\necho \'{"apiVersion":"client.authentication.k8s.io/v1","kind":"Other","status":{"token":"leaked-secret"}}\'\n',
    );
    await chmod(script, 0o755);
    const { path } = await kubeconfig({
      user: { exec: { apiVersion: 'client.authentication.k8s.io/v1', command: script } },
    });
    await assert.rejects((await kubeConnectionFromFile(path)).auth(), (err: unknown) => {
      assert.ok(err instanceof KubeCredentialError);
      assert.match(err.message, /invalid ExecCredential \(at kind\)/);
      assert.doesNotMatch(err.message, /leaked-secret/);
      return true;
    });
  });

  test('a missing command shows its install hint', async () => {
    const { path } = await kubeconfig({
      user: {
        exec: {
          apiVersion: 'client.authentication.k8s.io/v1',
          command: 'gpucloud-no-such-plugin',
          installHint: 'install it from example.test',
        },
      },
    });
    await assert.rejects(
      (await kubeConnectionFromFile(path)).auth(),
      /not found: install it from example\.test/,
    );
  });

  test('an unknown exec apiVersion is refused at load', async () => {
    const { path } = await kubeconfig({
      user: { exec: { apiVersion: 'client.authentication.k8s.io/v1alpha1', command: 'x' } },
    });
    await rejectsWithField(kubeConnectionFromFile(path), 'users[u].user.exec.apiVersion');
  });
});

describe('in-cluster', () => {
  async function serviceAccount(token: string): Promise<string> {
    const account = join(dir, `sa-${++files}`);
    await mkdir(account);
    await writeFile(join(account, 'ca.crt'), CA);
    await writeFile(join(account, 'token'), token);
    return account;
  }

  test('the service address and account, re-reading the rotated token', async () => {
    const account = await serviceAccount('first');
    const connection = await inClusterConnection({
      env: { KUBERNETES_SERVICE_HOST: '10.96.0.1', KUBERNETES_SERVICE_PORT: '443' },
      serviceAccountDir: account,
      tokenRereadMs: 50,
    });
    assert.equal(connection.server, 'https://10.96.0.1:443');
    const auth = await connection.auth();
    assert.deepEqual(auth.headers, { authorization: 'Bearer first' });
    assert.deepEqual(auth.tls, { ca: CA, rejectUnauthorized: true });
    await writeFile(join(account, 'token'), 'rotated\n');
    await until(
      async () => (await connection.auth()).headers.authorization === 'Bearer rotated',
      'the rotated token',
      2_000,
    );
  });

  test('an IPv6 service host is bracketed', async () => {
    const connection = await inClusterConnection({
      env: { KUBERNETES_SERVICE_HOST: 'fd00::1', KUBERNETES_SERVICE_PORT: '443' },
      serviceAccountDir: await serviceAccount('t'),
    });
    assert.equal(connection.server, 'https://[fd00::1]:443');
  });

  test('outside a pod the missing variable is named', async () => {
    await rejectsWithField(
      inClusterConnection({ env: {}, serviceAccountDir: await serviceAccount('t') }),
      'KUBERNETES_SERVICE_HOST',
      /--kubeconfig/,
    );
  });

  test('a missing token fails at load', async () => {
    const account = await serviceAccount('t');
    await rm(join(account, 'token'));
    await assert.rejects(
      inClusterConnection({
        env: { KUBERNETES_SERVICE_HOST: 'h', KUBERNETES_SERVICE_PORT: '1' },
        serviceAccountDir: account,
      }),
      KubeCredentialError,
    );
  });
});

describe('loadKubeConnection defaults', () => {
  const inCluster = { KUBERNETES_SERVICE_HOST: '10.0.0.1', KUBERNETES_SERVICE_PORT: '6443' };

  test('the first file of $KUBECONFIG', async () => {
    const { path } = await kubeconfig({ cluster: { server: 'https://from-env:1' } });
    const connection = await loadKubeConnection({
      env: { ...inCluster, KUBECONFIG: `${path}:${join(dir, 'ignored')}` },
      homeDir: dir,
    });
    assert.equal(connection.server, 'https://from-env:1');
  });

  test('an explicit path wins over $KUBECONFIG', async () => {
    const { path } = await kubeconfig({ cluster: { server: 'https://explicit:1' } });
    const connection = await loadKubeConnection({
      kubeconfigPath: path,
      env: { KUBECONFIG: join(dir, 'absent') },
    });
    assert.equal(connection.server, 'https://explicit:1');
  });

  test('~/.kube/config when it exists, else in-cluster', async () => {
    const home = join(dir, `home-${++files}`);
    const account = join(dir, `home-sa-${files}`);
    await mkdir(account);
    await writeFile(join(account, 'ca.crt'), CA);
    await writeFile(join(account, 'token'), 'sa-token');
    const fallback = await loadKubeConnection({ env: inCluster, homeDir: home, serviceAccountDir: account });
    assert.equal(fallback.server, 'https://10.0.0.1:6443');
    assert.equal(fallback.source, 'in-cluster');

    const { path } = await kubeconfig({ cluster: { server: 'https://from-home:1' } });
    await mkdir(join(home, '.kube'), { recursive: true });
    await writeFile(join(home, '.kube', 'config'), await readFile(path));
    const fromHome = await loadKubeConnection({ env: inCluster, homeDir: home, serviceAccountDir: account });
    assert.equal(fromHome.server, 'https://from-home:1');
  });
});
