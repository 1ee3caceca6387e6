import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { setImmediate, setTimeout } from 'node:timers/promises';
import { callbackUrl, MAX_CONNECTIONS, startCallbackServer } from '../../src/operator/callback-server.ts';
import { captureLogs } from '../support/log-capture.ts';
import { until } from '../support/until.ts';

const TOKEN = 'cb-token-3f9a1c77e2-0123456789abcdef';

describe('pod callback receiver', () => {
  const hints: Array<[string, string]> = [];
  let server: Awaited<ReturnType<typeof startCallbackServer>>;
  const logs = captureLogs('debug');

  before(async () => {
    server = await startCallbackServer({
      port: 0,
      host: '127.0.0.1',
      token: TOKEN,
      onHint: (podId, status) => hints.push([podId, status]),
      log: logs.logger,
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

  test('a sender that goes away mid-body ends nothing but its own request', async () => {
    const rejections: unknown[] = [];
    const onRejection = (reason: unknown) => rejections.push(reason);
    process.on('unhandledRejection', onRejection);
    try {
      const { port } = new URL(server.url);
      const socket = connect(Number(port), '127.0.0.1');
      await once(socket, 'connect');
      const path = new URL(callbackUrl(server.url, TOKEN)).pathname;
      const failed = () => logs.lines.filter((line) => line.msg === 'pod callback request failed').length;
      const failedBefore = failed();
      socket.write(
        `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n{"podId":`,
      );
      await setTimeout(50);
      socket.destroy();
      // The server's read of the body fails once the sender is gone: it says so, or, were the failure let
      // loose, the process hears of an unhandled rejection. Either ends the wait; one turn of the event
      // loop more lets a rejection of the same moment surface.
      await until(() => failed() > failedBefore || rejections.length > 0, 'the cut-off request handled');
      await setImmediate();
      assert.deepEqual(rejections, []);
      const response = await post(
        callbackUrl(server.url, TOKEN),
        JSON.stringify({ podId: '9', status: 'RUNNING', timestamp: '1' }),
      );
      assert.equal(response.status, 204, 'the server still serves');
    } finally {
      process.off('unhandledRejection', onRejection);
    }
  });

  test('a sender that never finishes its headers is cut off, and connections are capped', async () => {
    const { port } = new URL(server.url);
    const socket = connect(Number(port), '127.0.0.1');
    await once(socket, 'connect');
    socket.write('POST /v1/callbacks/pods/x HTTP/1.1\r\nHost: x\r\n');
    socket.resume();
    const closed = await Promise.race([
      once(socket, 'close').then(() => true),
      setTimeout(20_000).then(() => false),
    ]);
    socket.destroy();
    assert.ok(closed, 'the server closed the half-sent request');
    assert.equal(server.maxConnections, MAX_CONNECTIONS);
  });
});
