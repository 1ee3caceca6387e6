// X.509 certificates made with node:crypto alone, which signs but cannot build a certificate: a small DER
// writer for the few fields a CA, a serving certificate and a client certificate need (P-256 keys,
// ECDSA with SHA-256). Used where no other tool may be assumed: the local control plane's front proxy and
// the tenant API's serving certificate on a developer's machine.
import {
  createHash,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  type KeyObject,
  randomBytes,
  sign,
} from 'node:crypto';

export interface CertificateAuthority {
  readonly certPem: string;
  readonly keyPem: string;
}

export interface IssuedCertificate {
  readonly certPem: string;
  readonly keyPem: string;
}

export interface CertificateRequest {
  readonly commonName: string;
  readonly organization?: readonly string[];
  /** subjectAltName DNS names. */
  readonly dnsNames?: readonly string[];
  /** subjectAltName IP addresses (IPv4 only). */
  readonly ipAddresses?: readonly string[];
  /** What the certificate proves: a server's name, a client's identity, or both. */
  readonly usage: 'server' | 'client';
  readonly days: number;
}

const OID = {
  ecPublicKey: '1.2.840.10045.2.1',
  ecdsaWithSha256: '1.2.840.10045.4.3.2',
  commonName: '2.5.4.3',
  organization: '2.5.4.10',
  subjectKeyIdentifier: '2.5.29.14',
  keyUsage: '2.5.29.15',
  subjectAltName: '2.5.29.17',
  basicConstraints: '2.5.29.19',
  authorityKeyIdentifier: '2.5.29.35',
  extKeyUsage: '2.5.29.37',
  serverAuth: '1.3.6.1.5.5.7.3.1',
  clientAuth: '1.3.6.1.5.5.7.3.2',
} as const;

/** A self-signed CA that may sign certificates (and nothing below them). */
export function createCertificateAuthority(commonName: string, days: number): CertificateAuthority {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const certPem = certificate({
    subject: name(commonName),
    issuer: name(commonName),
    publicKey,
    signer: privateKey,
    issuerKey: publicKey,
    days,
    extensions: [
      extension(OID.basicConstraints, true, sequence(boolean(true), integer(Buffer.from([0])))),
      // keyCertSign and cRLSign, and digitalSignature.
      extension(OID.keyUsage, true, bitString(Buffer.from([0x86]), 1)),
    ],
  });
  return { certPem, keyPem: pemKey(privateKey) };
}

/** A certificate signed by `ca`, with a new key. */
export function issueCertificate(ca: CertificateAuthority, request: CertificateRequest): IssuedCertificate {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const caKey = createPrivateKey(ca.keyPem);
  const caPublic = createPublicKey(caKey);
  const alternatives = [
    ...(request.dnsNames ?? []).map((dns) => tagged(0x82, Buffer.from(dns, 'ascii'))),
    ...(request.ipAddresses ?? []).map((ip) => tagged(0x87, Buffer.from(ip.split('.').map(Number)))),
  ];
  const certPem = certificate({
    subject: name(request.commonName, request.organization),
    issuer: subjectOf(ca.certPem),
    publicKey,
    signer: caKey,
    issuerKey: caPublic,
    days: request.days,
    extensions: [
      extension(OID.basicConstraints, true, sequence()),
      // digitalSignature and keyEncipherment.
      extension(OID.keyUsage, true, bitString(Buffer.from([0xa0]), 5)),
      extension(
        OID.extKeyUsage,
        false,
        sequence(objectId(request.usage === 'server' ? OID.serverAuth : OID.clientAuth)),
      ),
      ...(alternatives.length > 0 ? [extension(OID.subjectAltName, false, sequence(...alternatives))] : []),
    ],
  });
  return { certPem, keyPem: pemKey(privateKey) };
}

interface CertificateParts {
  subject: Buffer;
  issuer: Buffer;
  publicKey: KeyObject;
  signer: KeyObject;
  issuerKey: KeyObject;
  days: number;
  extensions: Buffer[];
}

function certificate(parts: CertificateParts): string {
  const spki = parts.publicKey.export({ type: 'spki', format: 'der' });
  const algorithm = sequence(objectId(OID.ecdsaWithSha256));
  // A day of slack before now: a clock a little behind ours still accepts it.
  const notBefore = new Date(Date.now() - 86_400_000);
  const notAfter = new Date(Date.now() + parts.days * 86_400_000);
  const serial = randomBytes(16);
  // Positive, and never a leading zero byte: a DER INTEGER has one form, and Go refuses any other.
  serial[0] = ((serial[0] ?? 0) & 0x3f) | 0x40;
  const tbs = sequence(
    tagged(0xa0, integer(Buffer.from([2]))),
    integer(serial),
    algorithm,
    parts.issuer,
    sequence(time(notBefore), time(notAfter)),
    parts.subject,
    spki,
    tagged(
      0xa3,
      sequence(
        ...parts.extensions,
        extension(OID.subjectKeyIdentifier, false, octetString(keyId(parts.publicKey))),
        extension(OID.authorityKeyIdentifier, false, sequence(tagged(0x80, keyId(parts.issuerKey)))),
      ),
    ),
  );
  const signature = sign('sha256', tbs, parts.signer);
  const der = sequence(tbs, algorithm, bitString(signature, 0));
  return pem('CERTIFICATE', der);
}

/** The subject Name of a PEM certificate, as DER: the issuer of what it signs must match it byte for byte. */
function subjectOf(certPem: string): Buffer {
  const der = Buffer.from(certPem.replace(/-----[^-]+-----|\s/g, ''), 'base64');
  const tbs = children(children(der)[0] ?? Buffer.alloc(0));
  // version, serial, signature algorithm, issuer, validity, subject
  const subject = tbs[5];
  if (!subject) throw new Error('not an X.509 certificate');
  return subject;
}

/** The DER elements inside a constructed element. */
function children(element: Buffer): Buffer[] {
  const { start, end } = bounds(element, 0);
  const found: Buffer[] = [];
  for (let offset = start; offset < end; ) {
    const next = bounds(element, offset);
    found.push(element.subarray(offset, next.end));
    offset = next.end;
  }
  return found;
}

function bounds(buffer: Buffer, offset: number): { start: number; end: number } {
  const first = buffer[offset + 1] ?? 0;
  if (first < 0x80) return { start: offset + 2, end: offset + 2 + first };
  const bytes = first & 0x7f;
  const length = buffer.readUIntBE(offset + 2, bytes);
  return { start: offset + 2 + bytes, end: offset + 2 + bytes + length };
}

function keyId(key: KeyObject): Buffer {
  return createHash('sha1')
    .update(key.export({ type: 'spki', format: 'der' }))
    .digest();
}

function name(commonName: string, organization: readonly string[] = []): Buffer {
  return sequence(
    ...organization.map((org) => set(sequence(objectId(OID.organization), utf8(org)))),
    set(sequence(objectId(OID.commonName), utf8(commonName))),
  );
}

function extension(id: string, critical: boolean, value: Buffer): Buffer {
  return sequence(objectId(id), ...(critical ? [boolean(true)] : []), octetString(value));
}

function time(date: Date): Buffer {
  const iso = date.toISOString().replace(/[-:T]/g, '').slice(0, 14);
  // UTCTime until 2049, GeneralizedTime after (RFC 5280 §4.1.2.5).
  return date.getUTCFullYear() < 2050
    ? tagged(0x17, Buffer.from(`${iso.slice(2)}Z`, 'ascii'))
    : tagged(0x18, Buffer.from(`${iso}Z`, 'ascii'));
}

function objectId(dotted: string): Buffer {
  const [a = 0, b = 0, ...rest] = dotted.split('.').map(Number);
  const bytes = [40 * a + b];
  for (const arc of rest) {
    const base128 = [arc & 0x7f];
    for (let value = arc >>> 7; value > 0; value >>>= 7) base128.unshift((value & 0x7f) | 0x80);
    bytes.push(...base128);
  }
  return tagged(0x06, Buffer.from(bytes));
}

/**
 * A non-negative DER INTEGER, in its one minimal form: leading zero bytes dropped, one zero byte before a
 * high bit. Go's x509 parser refuses any other form ("malformed serial number"), so a random serial whose
 * first byte happens to be zero must not keep it.
 */
function integer(value: Buffer): Buffer {
  let start = 0;
  while (start < value.length - 1 && value[start] === 0) start++;
  const digits = value.subarray(start);
  return tagged(0x02, (digits[0] ?? 0) & 0x80 ? Buffer.concat([Buffer.from([0]), digits]) : digits);
}

function boolean(value: boolean): Buffer {
  return tagged(0x01, Buffer.from([value ? 0xff : 0]));
}

function bitString(bits: Buffer, unusedBits: number): Buffer {
  return tagged(0x03, Buffer.concat([Buffer.from([unusedBits]), bits]));
}

function octetString(value: Buffer): Buffer {
  return tagged(0x04, value);
}

function utf8(text: string): Buffer {
  return tagged(0x0c, Buffer.from(text, 'utf8'));
}

function sequence(...items: Buffer[]): Buffer {
  return tagged(0x30, Buffer.concat(items));
}

function set(...items: Buffer[]): Buffer {
  return tagged(0x31, Buffer.concat(items));
}

function tagged(tag: number, content: Buffer): Buffer {
  return Buffer.concat([Buffer.from([tag]), length(content.length), content]);
}

function length(size: number): Buffer {
  if (size < 0x80) return Buffer.from([size]);
  const bytes: number[] = [];
  for (let rest = size; rest > 0; rest >>>= 8) bytes.unshift(rest & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

function pem(label: string, der: Buffer): string {
  const lines = der.toString('base64').match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${label}-----\n${lines.join('\n')}\n-----END ${label}-----\n`;
}

function pemKey(key: KeyObject): string {
  return String(key.export({ type: 'pkcs8', format: 'pem' }));
}
