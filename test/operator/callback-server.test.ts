import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { createLogger } from '../../src/lib/logger.ts';
import { callbackUrl, startCallbackServer } from '../../src/operator/callback-server.ts';

const TOKEN = 'cb-token-3f9a1c77e2';

describe('pod callback receiver', () => {
  const hints: Array<[string, string]> = [];
  let server: Awaited<ReturnType<typeof startCallbackServer>>;
  const sink = new Writable({ write: (_chunk, _encoding, done) => done() });

  before(async () => {
    server = await startCallbackServer({
      port: 0,
      host: '127.0.0.1',
      token: TOKEN,
      onHint: (podId, status) => hints.push([podId, status]),
      log: createLogger({ destination: sink }),
    });
  });
  after(() => server.close());

  const post = (url: string, body: string) =>
    fetch(url, { method: 'POST', body, headers: { 'content-type': 'application/json' } });

  test('an authentic callback wakes a re-read of the pod', async () => {
    const response = await post(
      callbackUrl(server.url, TOKEN),
      JSON.stringify({ podId: '10000042', status: 'RUNNING', timestamp: '1700000000000' }),
    );
    assert.equal(response.status, 204);
    assert.deepEqual(hints.at(-1), ['10000042', 'RUNNING']);
  });

  test('a caller without the token is refused and changes nothing', async () => {
    const before = hints.length;
    for (const url of [
      callbackUrl(server.url, 'wrong'),
      callbackUrl(server.url, `${TOKEN}x`),
      callbackUrl(server.url, ''),
    ]) {
      const response = await post(url, JSON.stringify({ podId: '1', status: 'RUNNING' }));
      assert.equal(response.status, 401, url);
    }
    assert.equal(hints.length, before);
  });

  test('malformed, oversized or misrouted requests get a clear status, never a crash', async () => {
    const url = callbackUrl(server.url, TOKEN);
    assert.equal((await post(url, '{not json')).status, 400);
    assert.equal((await post(url, JSON.stringify({ status: 'RUNNING' }))).status, 400);
    assert.equal(
      (await post(url, JSON.stringify({ podId: '1', status: 'x'.repeat(64 * 1024), timestamp: '1' }))).status,
      400,
    );
    assert.equal((await fetch(url)).status, 404);
    assert.equal((await post(`${server.url}/elsewhere`, '{}')).status, 404);
    assert.equal(
      (await post(url, JSON.stringify({ podId: 7, status: 'FAILED', timestamp: '1700000000000' }))).status,
      204,
      'the server still serves',
    );
  });
});
