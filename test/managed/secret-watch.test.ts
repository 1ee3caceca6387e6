import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createLogger } from '../../src/lib/logger.ts';
import { SecretWatch } from '../../src/managed/secrets/secret-watch.ts';

// The Secret watch on a fake reader: each Secret in use is read once per check, whatever the number of
// resources using it, and a resource is woken once per change of a Secret its last reconcile read.
function world() {
  const secrets = new Map<string, Record<string, string>>([
    ['ns/token', { token: 'a' }],
    ['ns/other', { key: 'x' }],
  ]);
  const reads: string[] = [];
  const woken: string[] = [];
  const state = { failing: false };
  const watch = new SecretWatch({
    read: async (namespace, name) => {
      reads.push(`${namespace}/${name}`);
      if (state.failing) throw new Error('the apiserver is away');
      return secrets.get(`${namespace}/${name}`);
    },
    wake: (key) => void woken.push(key),
    intervalMs: 60_000,
    log: createLogger({ level: 'silent' }),
  });
  return { secrets, reads, woken, watch, state };
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
});
