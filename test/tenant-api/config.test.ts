import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError, loadConfig } from '../../src/operator/config.ts';

// The tenant API's flags: off without a port; with one, a serving pair from files or from a Secret the
// operator keeps for its Service, never both and never half of either.
const base = ['--api-url', 'https://api.example'];
const env = { GPUCLOUD_API_KEY: 'k' };
const load = (...flags: string[]) => loadConfig([...base, ...flags], env);
const refused = (...flags: string[]) => {
  try {
    load(...flags);
  } catch (error) {
    assert.ok(error instanceof ConfigError);
    return error.message;
  }
  assert.fail(`accepted ${flags.join(' ')}`);
};

test('off unless a port is given; the limits have their defaults', () => {
  const config = load();
  assert.equal(config.tenantApiPort, 0);
  assert.equal(config.tenantApiRequestsPerSecond, 5);
  assert.equal(config.tenantApiStreamsPerUser, 2);
  assert.equal(config.tenantApiStreamsPerAccount, 10);
});

test('a port needs its serving pair: files, or a Secret and the Service it is for', () => {
  assert.match(refused('--tenant-api-port', '8443'), /needs its serving pair/);
  assert.match(refused('--tenant-api-port', '8443', '--tenant-api-cert-file', '/c'), /go together/);
  assert.match(
    refused('--tenant-api-port', '8443', '--tenant-api-tls-secret', 'tls'),
    /needs its serving pair/,
  );
  assert.match(
    refused(
      '--tenant-api-port',
      '8443',
      '--tenant-api-cert-file',
      '/c',
      '--tenant-api-key-file',
      '/k',
      '--tenant-api-tls-secret',
      'tls',
    ),
    /exclude each other/,
  );
  const files = load(
    '--tenant-api-port',
    '8443',
    '--tenant-api-cert-file',
    '/c',
    '--tenant-api-key-file',
    '/k',
  );
  assert.equal(files.tenantApiCertFile, '/c');
  const secret = load(
    '--tenant-api-port',
    '8443',
    '--tenant-api-tls-secret',
    'tls',
    '--tenant-api-service',
    'api',
  );
  assert.equal(secret.tenantApiTlsSecret, 'tls');
});

test('bad values are named by their flag and variable', () => {
  assert.match(
    refused('--tenant-api-advertise-address', 'pod-1'),
    /--tenant-api-advertise-address \/ POD_IP/,
  );
  assert.match(refused('--tenant-api-streams-per-user', '1.5'), /--tenant-api-streams-per-user/);
  assert.match(refused('--tenant-api-rps', '0'), /--tenant-api-rps/);
  assert.match(refused('--tenant-api-service', 'Not_A_Name'), /--tenant-api-service/);
});
