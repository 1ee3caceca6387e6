import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ReconcileError, withoutSecrets } from '../../src/managed/core/errors.ts';
import type { Claim } from '../../src/managed/core/store.ts';
import { type ClaimQuestion, judgeClaim } from '../../src/managed/identity/claims.ts';

const me = 'uid-me';
const claim = (uid: string, proved: boolean): Claim => ({
  key: { namespace: 'ns', name: uid },
  uid,
  account: 'default',
  proved,
});
const ask = (q: Partial<ClaimQuestion>): ReturnType<typeof judgeClaim> =>
  judgeClaim({
    uid: me,
    id: '42',
    statusId: undefined,
    claims: [],
    marker: undefined,
    isLive: () => true,
    ...q,
  });

describe('judgeClaim', () => {
  test('an object nobody else names is held', () => {
    assert.deepEqual(ask({ claims: [claim(me, false)] }), { holds: true });
  });

  test('a claim another resource proved wins, even over an unproved marker match', () => {
    const verdict = ask({ claims: [claim(me, false), claim('uid-other', true)], marker: me });
    assert.equal(verdict.holds, false);
  });

  test('an owner marker naming another live resource refuses; one naming a deleted resource does not', () => {
    const marker = 'uid-owner';
    assert.equal(ask({ marker, isLive: (uid) => uid === marker }).holds, false);
    assert.deepEqual(ask({ marker, isLive: () => false }), { holds: true });
  });

  test('two resources that merely name one object are both refused, unless one shows it is its own', () => {
    const contested = [claim(me, false), claim('uid-other', false)];
    assert.equal(ask({ claims: contested }).holds, false);
    assert.deepEqual(ask({ claims: contested, statusId: '42' }), { holds: true });
    assert.deepEqual(ask({ claims: contested, marker: me }), { holds: true });
  });

  test('the reason names no other resource', () => {
    const verdict = ask({ claims: [claim('uid-other', true)] });
    assert.ok(!verdict.holds && !verdict.reason.includes('uid-other') && !verdict.reason.includes('ns'));
  });
});

describe('withoutSecrets', () => {
  test('cuts every revealed Secret value from the message and drops the raw cause', () => {
    const cause = new Error('echo: hunter2-token');
    const failure = new ReconcileError('CloudRejected', 'bad env FOO=hunter2-token (twice: hunter2-token)', {
      terminal: true,
      cause,
    });
    const clean = withoutSecrets(failure, new Set(['hunter2-token', 'unused']));
    assert.equal(clean.message, 'bad env FOO=[redacted] (twice: [redacted])');
    assert.equal(clean.reason, 'CloudRejected');
    assert.equal(clean.terminal, true);
    assert.equal(clean.cause, undefined);
  });

  test('leaves a failure that shows no Secret as it is', () => {
    const failure = new ReconcileError('CloudUnavailable', 'timeout', { terminal: false });
    assert.equal(withoutSecrets(failure, new Set(['hunter2-token'])), failure);
  });
});
