import assert from 'node:assert/strict';
import { once } from 'node:events';
import { after, before, test } from 'node:test';
import { connect, type TLSSocket } from 'node:tls';
import { Registry } from 'prom-client';
import { KubeClient } from '../../src/kube/client.ts';
import { createLogger } from '../../src/lib/logger.ts';
import { createCertificateAuthority, issueCertificate } from '../../src/lib/x509.ts';
import { TenantLimits } from '../../src/tenant-api/limits.ts';
import { TenantApiMetrics } from '../../src/tenant-api/metrics.ts';
import { TenantApiServer } from '../../src/tenant-api/server.ts';

// A client that sends its request slowly, or leaves part of it unsent, holds its connection no longer than
// the server's timeouts, over real TLS on loopback (issue 33, 6). Nothing past the arrival of the request
// is reached here: the authorizer never answers, and the cluster is never called.
const TIMEOUTS = { headersMs: 300, requestMs: 600 };
const proxyCa = createCertificateAuthority('front-proxy-ca', 1);
const servingCa = createCertificateAuthority('serving-ca', 1);
const serving = issueCertificate(servingCa, {
  commonName: 'api',
  dnsNames: ['api'],
  usage: 'server',
  days: 1,
});
const proxy = issueCertificate(proxyCa, { commonName: 'front-proxy-client', usage: 'client', days: 1 });
const metrics = new TenantApiMetrics(new Registry());
const server = new TenantApiServer({
  port: 0,
  host: '127.0.0.1',
  tls: serving,
  requestHeader: {
    caPem: proxyCa.certPem,
    allowedNames: ['front-proxy-client'],
    usernameHeaders: ['X-Remote-User'],
    groupHeaders: ['X-Remote-Group'],
    extraHeaderPrefixes: ['X-Remote-Extra-'],
  },
  authorizer: { authorize: () => new Promise(() => undefined) },
  kube: new KubeClient({
    server: 'https://127.0.0.1:1',
    source: 'nowhere',
    auth: async () => ({ headers: {}, tls: { rejectUnauthorized: true } }),
  }),
  accounts: {
    resolve: () => assert.fail('no account is resolved before the request has arrived'),
    scopeOf: () => undefined,
    revision: () => 0,
    onChange: () => () => undefined,
  },
  limits: new TenantLimits(
    { callsPerSecond: 1, maxWaiting: 1, streamsPerUser: 1, streamsPerAccount: 1 },
    metrics,
  ),
  metrics,
  serving: () => true,
  followPollMs: 1_000,
  log: createLogger({ level: 'silent' }),
  timeouts: TIMEOUTS,
});
before(() => server.start());
after(() => server.close());

const TASKS = '/apis/tenant.gpucloud.io/v1alpha1/namespaces/team-a/serverlessendpoints/queue/tasks';

async function open(withProxyCertificate: boolean): Promise<TLSSocket> {
  const socket = connect({
    host: '127.0.0.1',
    port: server.port,
    servername: 'api',
    ca: servingCa.certPem,
    ...(withProxyCertificate ? { cert: proxy.certPem, key: proxy.keyPem } : {}),
  });
  await once(socket, 'secureConnect');
  return socket;
}

/** Everything the server sends until it closes the connection, and how long that took. */
async function untilClosed(socket: TLSSocket): Promise<{ text: string; ms: number }> {
  const started = performance.now();
  let text = '';
  socket.on('data', (chunk) => (text += chunk));
  await once(socket, 'close');
  return { text, ms: performance.now() - started };
}

test('headers that never finish: 408, and the connection is closed', async () => {
  const socket = await open(true);
  socket.write(`GET ${TASKS} HTTP/1.1\r\nHost: api\r\nX-Remote-User: editor\r\n`);
  const { text, ms } = await untilClosed(socket);
  assert.match(text, /^HTTP\/1\.1 408 /);
  assert.ok(ms < TIMEOUTS.headersMs + 2_000, `closed after ${ms} ms`);
});

test('a body that never finishes: 408, and the connection is closed', async () => {
  const socket = await open(true);
  socket.write(
    `POST ${TASKS} HTTP/1.1\r\nHost: api\r\nX-Remote-User: editor\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"input":`,
  );
  const { text, ms } = await untilClosed(socket);
  assert.match(text, /^HTTP\/1\.1 408 /);
  assert.ok(ms < TIMEOUTS.requestMs + 2_000, `closed after ${ms} ms`);
});

test('a refusal is answered once the body is read and thrown away: the connection then serves the next request', async () => {
  const socket = await open(false);
  let text = '';
  socket.on('data', (chunk) => (text += chunk));
  const body = `{"input":"${'x'.repeat(2 * 1024 * 1024)}"}`;
  socket.write(
    `POST ${TASKS} HTTP/1.1\r\nHost: api\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`,
  );
  // The first half, a pause (the refusal is decided, the body still arriving), then the rest.
  socket.write(body.slice(0, body.length / 2));
  await new Promise((resolve) => setTimeout(resolve, 100));
  socket.write(body.slice(body.length / 2));
  socket.write(`GET /apis HTTP/1.1\r\nHost: api\r\n\r\n`);
  const closed = once(socket, 'close').then(() => 'closed');
  while ((text.match(/HTTP\/1\.1 \d{3} /g) ?? []).length < 2) {
    if ((await Promise.race([once(socket, 'data'), closed])) === 'closed') break;
  }
  socket.destroy();
  const [first, second] = text.match(/HTTP\/1\.1 \d{3} /g) ?? [];
  assert.equal(first, 'HTTP/1.1 401 ');
  assert.equal(second, 'HTTP/1.1 401 ', 'the second request on the connection was answered');
  assert.doesNotMatch(text, /connection: close/i);
});

test('a refusal of a body larger than the server reads to throw away closes the connection', async () => {
  const socket = await open(false);
  socket.write(
    `POST ${TASKS} HTTP/1.1\r\nHost: api\r\nContent-Type: application/json\r\nContent-Length: 100000000\r\n\r\n{"input":`,
  );
  const { text, ms } = await untilClosed(socket);
  assert.match(text, /^HTTP\/1\.1 401 /);
  assert.match(text, /\r\nconnection: close\r\n/i);
  assert.ok(ms < TIMEOUTS.requestMs, `closed after ${ms} ms, before the request timeout`);
});
