import assert from 'node:assert/strict';
import { describe, mock, test } from 'node:test';
import { SecretWatch } from '../../src/managed/secrets/secret-watch.ts';
import { captureLogs } from '../support/log-capture.ts';

// The Secret watch on a fake reader: each Secret in use is read once per check, whatever the number of
// resources using it, and a resource is woken once per change of a Secret its last reconcile read.
function world() {
  const secrets = new Map<string, Record<string, string>>([
    ['ns/token', { token: 'a' }],
    ['ns/other', { key: 'x' }],
  ]);
  const reads: string[] = [];
  const woken: string[] = [];
  const state: { failing: boolean; held?: Promise<void> } = { failing: false };
  const logs = captureLogs('warn');
  const watch = new SecretWatch({
    read: async (namespace, name) => {
      reads.push(`${namespace}/${name}`);
      await state.held;
      if (state.failing) throw new Error('the apiserver is away');
      return secrets.get(`${namespace}/${name}`);
    },
    wake: (key) => void woken.push(key),
    intervalMs: 60_000,
    log: logs.logger,
  });
  return { secrets, reads, woken, watch, state, logs };
}

describe('the Secret watch', () => {
  test('wakes the resources whose Secret changed, once per change, reading each Secret once', async () => {
    const w = world();
    await w.watch.session('uid-a', 'ns/a').read('ns', 'token');
    await w.watch.session('uid-b', 'ns/b').read('ns', 'token');
    await w.watch.session('uid-c', 'ns/c').read('ns', 'other');
    w.reads.length = 0;
    await w.watch.check();
    assert.deepEqual(w.reads.sort(), ['ns/other', 'ns/token'], 'one read per Secret');
    assert.deepEqual(w.woken, [], 'nothing changed');
    w.secrets.set('ns/token', { token: 'b' });
    await w.watch.check();
    assert.deepEqual(w.woken.sort(), ['ns/a', 'ns/b']);
    await w.watch.check();
    assert.deepEqual(w.woken.sort(), ['ns/a', 'ns/b'], 'not woken again for the same change');
  });

  test('a Secret deleted or created is a change; a reconcile reading other Secrets replaces what it used', async () => {
    const w = world();
    await w.watch.session('uid-a', 'ns/a').read('ns', 'missing');
    w.secrets.set('ns/missing', { token: 'now' });
    await w.watch.check();
    assert.deepEqual(w.woken, ['ns/a']);
    const reader = w.watch.session('uid-a', 'ns/a').read;
    await reader('ns', 'other');
    w.secrets.set('ns/missing', { token: 'later' });
    w.reads.length = 0;
    await w.watch.check();
    assert.deepEqual(w.reads, ['ns/other'], 'the Secret it no longer reads is not read');
  });

  test('a forgotten resource is not read for, and a failed read waits for the next check', async () => {
    const w = world();
    await w.watch.session('uid-a', 'ns/a').read('ns', 'token');
    w.watch.forget('uid-a');
    w.reads.length = 0;
    await w.watch.check();
    assert.deepEqual(w.reads, []);
    await w.watch.session('uid-b', 'ns/b').read('ns', 'token');
    w.secrets.set('ns/token', { token: 'b' });
    w.state.failing = true;
    await w.watch.check();
    assert.deepEqual(w.woken, [], 'nothing known, nothing woken');
    assert.deepEqual(
      w.logs.lines.map((line) => [line.secretRef, line.msg]),
      [['ns/token', 'reading a Secret in use failed; it is read again next interval']],
    );
    w.state.failing = false;
    await w.watch.check();
    assert.deepEqual(w.woken, ['ns/b']);
  });

  test('a session says whether a Secret changed since the resource’s previous reconcile read it', async () => {
    const w = world();
    const first = w.watch.session('uid-a', 'ns/a');
    await first.read('ns', 'token');
    assert.equal(first.changed(), false, 'never read before: no change known');
    const same = w.watch.session('uid-a', 'ns/a');
    await same.read('ns', 'token');
    assert.equal(same.changed(), false);
    w.secrets.set('ns/token', { token: 'b' });
    // The watch wakes the resource; its next reconcile still learns that the Secret changed.
    await w.watch.check();
    assert.deepEqual(w.woken, ['ns/a']);
    const next = w.watch.session('uid-a', 'ns/a');
    await next.read('ns', 'token');
    assert.equal(next.changed(), true);
  });

  test('the same data in another key order is no change', async () => {
    const w = world();
    w.secrets.set('ns/token', { a: '1', b: '2', c: '3' });
    await w.watch.session('uid-a', 'ns/a').read('ns', 'token');
    w.secrets.set('ns/token', { c: '3', a: '1', b: '2' });
    await w.watch.check();
    w.secrets.set('ns/token', { b: '2', c: '3', a: '1' });
    await w.watch.check();
    assert.deepEqual(w.woken, []);
  });

  test('a check while one is running reads nothing more', async () => {
    const w = world();
    await w.watch.session('uid-a', 'ns/a').read('ns', 'token');
    w.reads.length = 0;
    let release = () => {};
    w.state.held = new Promise((resolve) => {
      release = resolve;
    });
    const first = w.watch.check();
    await w.watch.check();
    release();
    await first;
    assert.deepEqual(w.reads, ['ns/token']);
  });

  test('holds something for each resource until it is forgotten', async () => {
    const w = world();
    await w.watch.session('uid-a', 'ns/a').read('ns', 'token');
    await w.watch.session('uid-b', 'ns/b').read('ns', 'other');
    assert.equal(w.watch.size, 2);
    w.watch.forget('uid-a');
    assert.equal(w.watch.size, 1);
  });

  test('started, it checks once per interval until stopped', async () => {
    mock.timers.enable({ apis: ['setInterval'] });
    try {
      const w = world();
      await w.watch.session('uid-a', 'ns/a').read('ns', 'token');
      w.reads.length = 0;
      const stop = w.watch.start();
      mock.timers.tick(59_999);
      assert.deepEqual(w.reads, []);
      mock.timers.tick(1);
      assert.deepEqual(w.reads, ['ns/token']);
      // The check's read is answered before the next tick: one check at a time.
      await new Promise((resolve) => setImmediate(resolve));
      stop();
      mock.timers.tick(120_000);
      assert.deepEqual(w.reads, ['ns/token'], 'nothing after stop');
    } finally {
      mock.timers.reset();
    }
  });
});
