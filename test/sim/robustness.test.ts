import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { describe, it } from 'node:test';
import { ApiCode } from '../../src/api/codes.ts';
import { podRequest, useSimulator } from './helpers.ts';

const sim = useSimulator();

/** The server still answers a good call. */
async function stillServing(): Promise<void> {
  assert.ok(Array.isArray(await sim.ok('GET', '/v2/pods')));
}

async function invalid(
  method: string,
  path: string,
  options: Parameters<typeof sim.call>[2],
  pattern: RegExp,
) {
  const answer = await sim.fails(ApiCode.InvalidRequest, method, path, options);
  assert.equal(answer.status, 400);
  assert.match(answer.body.message, pattern);
}

describe('bad input never crashes the simulator', () => {
  it('malformed JSON, JSON of the wrong shape, or a body where none belongs: 400 with 10001', async () => {
    await invalid('POST', '/v2/pods', { rawBody: '{"name": "x",' }, /not valid JSON/);
    await invalid('POST', '/v2/pods', { rawBody: 'hello' }, /not valid JSON/);
    await invalid('POST', '/v2/pods', { body: [1, 2] }, /body/);
    await invalid('POST', '/v2/pods', { body: null }, /body/);
    await invalid('POST', '/v2/pods', {}, /body/);
    await invalid('POST', '/v2/pods/1/pause', { body: {} }, /takes no body/);
    await stillServing();
  });

  it('wrong types and rule violations name the field', async () => {
    await invalid('POST', '/v2/pods', { body: podRequest('x', { gpuCount: 'two' }) }, /body\.gpuCount/);
    await invalid(
      'POST',
      '/v2/pods',
      { body: podRequest('x', { gpuCount: 3 }) },
      /body\.gpuCount: .*power of 2/,
    );
    await invalid('POST', '/v2/pods', { body: podRequest('', {}) }, /body\.name/);
    await invalid('POST', '/v2/pods', { body: podRequest('x', { maxPrice: 1 }) }, /body\.maxPrice/);
    await invalid(
      'POST',
      '/v2/pods',
      { body: podRequest('x', { gpuType: 'NVIDIA Imaginary' }) },
      /body\.gpuType/,
    );
    await invalid('POST', '/v2/pods', { body: podRequest('x', { unexpected: true }) }, /unexpected/);
    await invalid('GET', '/v2/pods/abc', {}, /path\.id/);
    await invalid('GET', '/v2/vms?page=0', {}, /query\.page/);
    await invalid('PUT', '/v2/serverless/1/workers?count=many', {}, /query\.count/);
    await invalid(
      'POST',
      '/v2/serverless',
      { body: { name: '1bad', image: 'i', resources: [] } },
      /body\.name.*body\.resources/,
    );
    await stillServing();
  });

  it('a 10 MB body is refused with 413 and an envelope; the server carries on', async () => {
    const huge = JSON.stringify({
      ...podRequest('huge'),
      initializationCommand: 'x'.repeat(10 * 1024 * 1024),
    });
    const answer = await sim.call('POST', '/v2/pods', {
      rawBody: huge,
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(answer.status, 413);
    assert.equal(answer.body.code, ApiCode.InvalidRequest);
    assert.match(answer.body.message, /larger than the \d+ bytes/);
    await stillServing();
  });

  it('unknown paths answer 404, wrong methods 405 with Allow, both with an envelope', async () => {
    const unknown = await sim.call('GET', '/v2/teleport');
    assert.equal(unknown.status, 404);
    assert.match(unknown.body.message, /no operation at GET \/v2\/teleport/);
    const wrongMethod = await sim.call('PATCH', '/v2/pods');
    assert.equal(wrongMethod.status, 405);
    assert.equal(wrongMethod.headers.get('allow'), 'POST, GET');
    assert.equal((await sim.call('GET', '/v2/pods/%E0%A4%A')).status, 404);
    assert.equal((await sim.call('GET', '/')).status, 404);
    await stillServing();
  });

  it('a missing or unknown API key is HTTP 401', async () => {
    const missing = await sim.call('GET', '/v2/pods', { key: null });
    assert.equal(missing.status, 401);
    assert.match(missing.body.message, /x-api-key/);
    assert.equal((await sim.call('GET', '/v2/vms', { key: 'stolen' })).status, 401);
    assert.equal(JSON.stringify(missing.body).includes('sim-test-key'), false);
  });

  it('garbage that is not HTTP, and many bad calls at once, leave the server serving', async () => {
    const { url } = await sim.running();
    const { port } = new URL(url);
    await new Promise<void>((resolve) => {
      const socket = connect(Number(port), '127.0.0.1', () => socket.end('\x00\x01 NOT HTTP\r\n\r\n'));
      socket.on('close', () => resolve());
      socket.on('error', () => resolve());
      socket.resume();
    });
    const answers = await Promise.all(
      Array.from({ length: 100 }, (_, i) => sim.call('POST', '/v2/pods', { rawBody: `{${'['.repeat(i)}` })),
    );
    assert.ok(answers.every((answer) => answer.status === 400));
    await stillServing();
  });
});
