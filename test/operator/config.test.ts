import assert from 'node:assert/strict';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { ConfigError, insecureApiUrl, loadConfig } from '../../src/operator/config.ts';

const base = { GPUCLOUD_API_URL: 'https://api.example.com', GPUCLOUD_API_KEY: 'k-123' };

test('defaults apply, and a flag wins over its environment variable', () => {
  const config = loadConfig(['--poll-interval', '5'], {
    ...base,
    POLL_INTERVAL_SECONDS: '60',
    CONCURRENCY: '4',
  });
  assert.equal(config.pollIntervalSeconds, 5);
  assert.equal(config.concurrency, 4);
  assert.equal(config.healthPort, 8081);
  assert.equal(config.leaderElect, false);
  assert.deepEqual(config.namespace, []);
  assert.equal(config.apiKey, 'k-123');
});

test('the API key file wins over the environment and is trimmed', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'config-test-'));
  const file = join(dir, 'key');
  await writeFile(file, 'from-file\n');
  assert.equal(loadConfig(['--api-key-file', file], base).apiKey, 'from-file');
  assert.throws(
    () => loadConfig(['--api-key-file', join(dir, 'missing')], base),
    /cannot read the API key file .*ENOENT/,
  );
});

test('every bad setting is named by its flag and variable, without echoing the key', () => {
  const cases: Array<[string[], NodeJS.ProcessEnv, RegExp]> = [
    [[], { GPUCLOUD_API_KEY: 'k' }, /--api-url \/ GPUCLOUD_API_URL: is required/],
    [
      ['--api-url', 'not a url'],
      { GPUCLOUD_API_KEY: 'k' },
      /--api-url \/ GPUCLOUD_API_URL: must be an http:\/\/ or https:\/\/ URL/,
    ],
    [
      ['--api-url', 'ftp://files.example'],
      { GPUCLOUD_API_KEY: 'k' },
      /must be an http:\/\/ or https:\/\/ URL/,
    ],
    [
      ['--api-url', 'javascript:alert(1)'],
      { GPUCLOUD_API_KEY: 'k' },
      /must be an http:\/\/ or https:\/\/ URL/,
    ],
    [
      ['--api-url', 'https://user:hunter2@api.example'],
      { GPUCLOUD_API_KEY: 'k' },
      /must not carry user:password/,
    ],
    [['--concurrency', '0.5'], base, /--concurrency \/ CONCURRENCY: must be a whole number/],
    [['--callback-bind-address', 'everywhere'], base, /--callback-bind-address \/ CALLBACK_BIND_ADDRESS/],
    [
      ['--callback-port', '9443', '--callback-base-url', 'https://cb.example'],
      { ...base, GPUCLOUD_CALLBACK_TOKEN: 'short' },
      /GPUCLOUD_CALLBACK_TOKEN must be at least 32 characters/,
    ],
    [[], { GPUCLOUD_API_URL: 'https://x' }, /no API key/],
    [['--concurrency', '0'], base, /--concurrency \/ CONCURRENCY/],
    [['--leader-elect', 'yes'], base, /--leader-elect \/ LEADER_ELECT/],
    [['--log-level', 'loud'], base, /--log-level \/ LOG_LEVEL/],
    [['--no-such-flag', 'x'], base, /no-such-flag/],
    [['--callback-port', '9443'], base, /--callback-port needs --callback-base-url/],
  ];
  for (const [argv, env, message] of cases) {
    assert.throws(
      () => loadConfig(argv, env),
      (error: unknown) => {
        assert.ok(error instanceof ConfigError, String(error));
        assert.match(error.message, message);
        assert.ok(!error.message.includes('k-123'));
        return true;
      },
    );
  }
});

test('plain http to another host is flagged, to this machine it is not', () => {
  assert.equal(insecureApiUrl('http://api.example.com'), true);
  assert.equal(insecureApiUrl('http://10.0.0.5:8080'), true);
  for (const url of [
    'https://api.example.com',
    'http://127.0.0.1:4000',
    'http://localhost:4000',
    'http://[::1]:4000',
  ]) {
    assert.equal(insecureApiUrl(url), false, url);
  }
});

test('the virtual nodes’ kubelet API takes its three files together, or none', () => {
  const all = [
    '--virtual-node-tls-cert-file',
    'c',
    '--virtual-node-tls-key-file',
    'k',
    '--virtual-node-client-ca-file',
    'ca',
  ];
  const on = { ...base, VIRTUAL_NODES: 'true' };
  assert.equal(loadConfig(all, on).virtualNodeClientCaFile, 'ca');
  assert.equal(loadConfig([], on).virtualNodeTlsCertFile, undefined);
  assert.throws(
    () => loadConfig(all.slice(0, 4), on),
    (error) =>
      error instanceof ConfigError && /--virtual-node-client-ca-file go together/.test(error.message),
  );
  // Without virtual nodes the files would serve nothing: refused, not ignored.
  assert.throws(
    () => loadConfig(all, base),
    (error) =>
      error instanceof ConfigError && /set --virtual-nodes=true \/ VIRTUAL_NODES=true/.test(error.message),
  );
});

test('the kubelet API ports are a range, or one port; 10250-10259 by default', () => {
  const on = { ...base, VIRTUAL_NODES: 'true' };
  assert.deepEqual(loadConfig([], on).virtualNodePorts, { first: 10250, last: 10259 });
  assert.deepEqual(loadConfig(['--virtual-node-ports', '20000-20003'], on).virtualNodePorts, {
    first: 20000,
    last: 20003,
  });
  assert.deepEqual(loadConfig([], { ...on, VIRTUAL_NODE_PORTS: '443' }).virtualNodePorts, {
    first: 443,
    last: 443,
  });
  for (const [value, problem] of [
    ['10259-10250', /the first no higher than the last/],
    ['0-10', /from 1 to 65535/],
    ['10250-70000', /from 1 to 65535/],
    ['10250,10251', /a range of ports such as 10250-10259/],
  ] as const) {
    assert.throws(
      () => loadConfig(['--virtual-node-ports', value], on),
      (error) =>
        error instanceof ConfigError &&
        error.message.startsWith('--virtual-node-ports / VIRTUAL_NODE_PORTS:') &&
        problem.test(error.message),
      value,
    );
  }
});

test('virtual nodes are off unless --virtual-nodes or VIRTUAL_NODES says true, the flag winning', () => {
  assert.equal(loadConfig([], base).virtualNodes, false);
  assert.equal(loadConfig(['--virtual-nodes', 'true'], base).virtualNodes, true);
  assert.equal(loadConfig(['--virtual-nodes=true'], base).virtualNodes, true);
  assert.equal(loadConfig([], { ...base, VIRTUAL_NODES: 'true' }).virtualNodes, true);
  assert.equal(
    loadConfig(['--virtual-nodes', 'false'], { ...base, VIRTUAL_NODES: 'true' }).virtualNodes,
    false,
  );
  assert.throws(
    () => loadConfig(['--virtual-nodes', 'yes'], base),
    (error) => error instanceof ConfigError && /--virtual-nodes \/ VIRTUAL_NODES/.test(error.message),
  );
});
