import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import * as index from 'undici';
import { Agent, buildConnector, Pool, proxyAgent, request } from '../src/undici.ts';

// src/undici.ts loads undici's parts by their paths inside the package: an upgrade that moves or
// changes them must fail here, not in production.
test("the parts loaded by path are undici's own", () => {
  assert.equal(Agent, index.Agent);
  assert.equal(Pool, index.Pool);
  assert.equal(buildConnector, index.buildConnector);
  assert.ok(proxyAgent({ uri: 'http://127.0.0.1:9' }) instanceof index.ProxyAgent);
});

test('request sends through the given dispatcher and answers status and body', async () => {
  const server = createServer((req, res) => {
    res.writeHead(201, { 'content-type': 'text/plain' });
    res.end(`${req.method} ${req.url}`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const pool = new Pool(origin);
  try {
    const response = await request(pool, { method: 'PUT', path: '/a?b=1' });
    assert.equal(response.statusCode, 201);
    assert.equal(await response.body.text(), 'PUT /a?b=1');
  } finally {
    await pool.close();
    server.close();
  }
});
