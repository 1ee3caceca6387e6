import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, request } from 'node:https';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { createCertificateAuthority, type IssuedCertificate, issueCertificate } from '../../src/lib/x509.ts';
import { authenticate, type RequestHeaderSettings } from '../../src/tenant-api/front-proxy.ts';

// Authentication as an extension apiserver does it, over real TLS on loopback: only the front proxy's
// certificate (the request-header CA, an allowed name) makes the X-Remote-* headers count.
const proxyCa = createCertificateAuthority('front-proxy-ca', 1);
const servingCa = createCertificateAuthority('serving-ca', 1);
const serving = issueCertificate(servingCa, {
  commonName: 'api',
  dnsNames: ['api'],
  usage: 'server',
  days: 1,
});
const proxy = issueCertificate(proxyCa, { commonName: 'front-proxy-client', usage: 'client', days: 1 });
const otherName = issueCertificate(proxyCa, { commonName: 'someone-else', usage: 'client', days: 1 });
const forged = issueCertificate(createCertificateAuthority('front-proxy-ca', 1), {
  commonName: 'front-proxy-client',
  usage: 'client',
  days: 1,
});

let settings: RequestHeaderSettings = {
  caPem: proxyCa.certPem,
  allowedNames: ['front-proxy-client'],
  usernameHeaders: ['X-Remote-User'],
  groupHeaders: ['X-Remote-Group'],
  extraHeaderPrefixes: ['X-Remote-Extra-'],
};
const server = createServer(
  {
    cert: serving.certPem,
    key: serving.keyPem,
    ca: proxyCa.certPem,
    requestCert: true,
    rejectUnauthorized: false,
  },
  (req, res) => res.end(JSON.stringify(authenticate(req, settings))),
);
before(async () => {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
});
after(() => server.close());

function send(client: IssuedCertificate | undefined, headers: Record<string, string | string[]>) {
  const { port } = server.address() as AddressInfo;
  return new Promise<{
    user?: { name: string; groups: string[]; extra: Record<string, string[]> };
    refused?: string;
  }>((resolve, reject) => {
    request(
      {
        host: '127.0.0.1',
        port,
        servername: 'api',
        ca: servingCa.certPem,
        headers,
        agent: false,
        ...(client ? { cert: client.certPem, key: client.keyPem } : {}),
      },
      (res) => {
        let text = '';
        res.on('data', (chunk) => (text += chunk));
        res.on('end', () => resolve(JSON.parse(text)));
      },
    )
      .on('error', reject)
      .end();
  });
}

const as = { 'X-Remote-User': 'alice', 'X-Remote-Group': ['team-a', 'system:authenticated'] };

test('the front proxy names the user, its groups and its extra', async () => {
  const answer = await send(proxy, {
    ...as,
    'X-Remote-Extra-Scopes': 'view',
    'X-Remote-Extra-Acme.com%2Fproject': 'p1',
  });
  assert.deepEqual(answer, {
    user: {
      name: 'alice',
      groups: ['team-a', 'system:authenticated'],
      extra: { scopes: ['view'], 'acme.com/project': ['p1'] },
    },
  });
});

test('the headers count for nothing without the certificate, or with one the CA did not sign', async () => {
  assert.match((await send(undefined, as)).refused ?? '', /request-header CA/);
  assert.match((await send(forged, as)).refused ?? '', /request-header CA/);
});

test('a certificate of the CA with a name that is not allowed is refused; no list allows any', async () => {
  assert.match((await send(otherName, as)).refused ?? '', /not one of the request-header allowed names/);
  settings = { ...settings, allowedNames: [] };
  assert.equal((await send(otherName, as)).user?.name, 'alice');
});

test('a proxied request that names no user is refused', async () => {
  assert.match((await send(proxy, { 'X-Remote-Group': 'system:masters' })).refused ?? '', /named no user/);
});
