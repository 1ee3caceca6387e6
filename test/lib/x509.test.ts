import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { once } from 'node:events';
import { createServer, request } from 'node:https';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import type { TLSSocket } from 'node:tls';
import { createCertificateAuthority, issueCertificate } from '../../src/lib/x509.ts';

// Certificates made with node:crypto alone must be what TLS stacks accept: read back by X509Certificate,
// and used for a real handshake where each side verifies the other.

test('a CA signs a serving and a client certificate that X509Certificate reads back as made', () => {
  const ca = createCertificateAuthority('test-ca', 30);
  const server = issueCertificate(ca, {
    commonName: 'api.team.svc',
    dnsNames: ['api.team.svc', 'localhost'],
    ipAddresses: ['127.0.0.1'],
    usage: 'server',
    days: 30,
  });
  const authority = new X509Certificate(ca.certPem);
  const leaf = new X509Certificate(server.certPem);
  assert.equal(authority.ca, true);
  assert.equal(leaf.ca, false);
  assert.equal(leaf.subject, 'CN=api.team.svc');
  assert.equal(leaf.issuer, 'CN=test-ca');
  assert.equal(leaf.subjectAltName, 'DNS:api.team.svc, DNS:localhost, IP Address:127.0.0.1');
  assert.ok(leaf.verify(authority.publicKey));
  assert.ok(leaf.checkIssued(authority));
  assert.ok(!leaf.verify(new X509Certificate(createCertificateAuthority('other', 1).certPem).publicKey));
  const days = (Date.parse(leaf.validTo) - Date.now()) / 86_400_000;
  assert.ok(days > 29 && days <= 30, String(days));
});

test('a TLS handshake verifies the server by name and the client by its CA', async () => {
  const ca = createCertificateAuthority('test-ca', 1);
  const server = issueCertificate(ca, {
    commonName: 'api',
    dnsNames: ['api.team.svc'],
    usage: 'server',
    days: 1,
  });
  const client = issueCertificate(ca, {
    commonName: 'front-proxy-client',
    organization: ['proxies'],
    usage: 'client',
    days: 1,
  });
  const https = createServer(
    { cert: server.certPem, key: server.keyPem, ca: ca.certPem, requestCert: true, rejectUnauthorized: true },
    (req, res) => res.end((req.socket as TLSSocket).getPeerCertificate().subject.CN),
  );
  https.listen(0, '127.0.0.1');
  await once(https, 'listening');
  try {
    const { port } = https.address() as AddressInfo;
    const body = await new Promise<string>((resolve, reject) => {
      request(
        {
          host: '127.0.0.1',
          port,
          servername: 'api.team.svc',
          ca: ca.certPem,
          cert: client.certPem,
          key: client.keyPem,
        },
        (res) => {
          let text = '';
          res.on('data', (chunk) => (text += chunk));
          res.on('end', () => resolve(text));
        },
      )
        .on('error', reject)
        .end();
    });
    assert.equal(body, 'front-proxy-client');
  } finally {
    https.close();
  }
});

/** The serial number of a certificate as DER encodes it: its length and first content byte. */
function serialEncoding(pem: string): { length: number; first: number } {
  const der = new X509Certificate(pem).raw;
  // Certificate SEQUENCE → tbsCertificate SEQUENCE → [0] version → INTEGER serial.
  let at = 0;
  const header = () => {
    const tag = der[at] ?? 0;
    let length = der[at + 1] ?? 0;
    at += 2;
    if (length & 0x80) {
      const bytes = length & 0x7f;
      length = 0;
      for (let i = 0; i < bytes; i++) length = length * 256 + (der[at + i] ?? 0);
      at += bytes;
    }
    return { tag, length };
  };
  header();
  header();
  const version = header();
  at += version.length;
  const serial = header();
  assert.equal(serial.tag, 0x02, 'the serial is an INTEGER');
  return { length: serial.length, first: der[at] ?? 0 };
}

test('every serial number is positive and minimally encoded, as Go requires (one in 256 was not)', () => {
  const ca = createCertificateAuthority('serials', 1);
  for (let i = 0; i < 600; i++) {
    const { certPem } = issueCertificate(ca, { commonName: `c${i}`, usage: 'client', days: 1 });
    const { length, first } = serialEncoding(certPem);
    assert.ok(first !== 0 && (first & 0x80) === 0, `serial ${i} starts with byte ${first}`);
    assert.equal(length, 16);
  }
});
