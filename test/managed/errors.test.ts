import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { z } from 'zod';
import { CloudApiError, RequestValidationError, TransportError } from '../../src/api/errors.ts';
import { KubeApiError } from '../../src/kube/client.ts';
import {
  isConflict,
  isNotFound,
  ReconcileError,
  toReconcileError,
  withoutSecrets,
} from '../../src/managed/core/errors.ts';
import { NotLeaderError } from '../../src/managed/core/fence.ts';

// How each failure reads on the resource: its Synced reason, its message and whether it is retried.

const cloudError = (httpStatus: number, code: number | null, serviceMessage = 'said the cloud') =>
  new CloudApiError({
    operation: 'pods.create',
    creates: true,
    httpStatus,
    code,
    serviceMessage,
    attempts: 1,
  });

describe('toReconcileError', () => {
  test('a ReconcileError is passed on as it is', () => {
    const error = new ReconcileError('Mine', 'as thrown', { terminal: true });
    assert.equal(toReconcileError(error), error);
    assert.equal(error.name, 'ReconcileError');
    assert.equal(String(error), 'ReconcileError: as thrown');
  });

  test('a change refused for want of the lease is an InternalError that says why, retried', () => {
    const error = new NotLeaderError('Widget');
    assert.equal(error.name, 'NotLeaderError');
    const failure = toReconcileError(error);
    assert.equal(failure.reason, 'InternalError');
    assert.equal(failure.terminal, false);
    assert.equal(
      failure.message,
      "not changing any Widget in the cloud: the leader lease is no longer certainly this process's",
    );
  });

  test('a refused API key is CloudKeyRejected and retried, whatever its envelope says', () => {
    const cause = cloudError(401, 10001);
    const failure = toReconcileError(cause);
    assert.equal(failure.reason, 'CloudKeyRejected');
    assert.equal(failure.terminal, false);
    assert.equal(failure.message, cause.message);
    assert.equal(failure.cause, cause);
  });

  test('NoTerminatePermission is PermissionDenied, terminal', () => {
    const failure = toReconcileError(cloudError(200, 11002));
    assert.equal(failure.reason, 'PermissionDenied');
    assert.equal(failure.terminal, true);
  });

  test('each kind of cloud failure has its own reason, terminal only when the cloud says so', () => {
    const cases: Array<[number, number | null, string, boolean]> = [
      [200, 10002, 'CloudUnavailable', false],
      [200, 10001, 'CloudRejected', true],
      [200, 13000, 'CloudNotFound', false],
      [200, 12001, 'CloudStateConflict', false],
      [302, null, 'CloudError', false],
    ];
    for (const [status, code, reason, terminal] of cases) {
      const cause = cloudError(status, code);
      const failure = toReconcileError(cause);
      assert.equal(failure.reason, reason, `code ${code}`);
      assert.equal(failure.terminal, terminal, `code ${code}`);
      assert.equal(failure.message, cause.message);
      assert.equal(failure.cause, cause);
    }
  });

  test('other client errors: an invalid request is terminal, a network failure is not', () => {
    const invalid = new RequestValidationError('pods.create', [
      { path: 'body.gpuCount', message: 'too small' },
    ]);
    const refused = toReconcileError(invalid);
    assert.equal(refused.reason, 'CloudRequestInvalid');
    assert.equal(refused.terminal, true);
    assert.equal(refused.message, invalid.message);
    assert.equal(refused.cause, invalid);
    const network = new TransportError({
      operation: 'pods.list',
      creates: false,
      reason: 'network',
      detail: 'ECONNREFUSED',
      origin: 'http://127.0.0.1:9',
      attempts: 3,
      mayHaveTakenEffect: false,
    });
    const down = toReconcileError(network);
    assert.equal(down.reason, 'CloudUnavailable');
    assert.equal(down.terminal, false);
    assert.equal(down.message, network.message);
  });

  test('a spec that does not fit its schema is InvalidSpec, terminal, naming the field', () => {
    const parsed = z.object({ size: z.number() }).safeParse({ size: 'big' });
    assert.ok(!parsed.success);
    const failure = toReconcileError(parsed.error);
    assert.equal(failure.reason, 'InvalidSpec');
    assert.equal(failure.terminal, true);
    assert.match(failure.message, /^the spec does not fit the schema: /);
    assert.match(failure.message, /size/);
    assert.equal(failure.cause, parsed.error);
  });

  test('an apiserver failure is KubernetesApiError and retried', () => {
    const cause = new KubeApiError('PATCH', 'ns/w', 500, 'InternalError', 'etcd');
    const failure = toReconcileError(cause);
    assert.equal(failure.reason, 'KubernetesApiError');
    assert.equal(failure.terminal, false);
    assert.equal(failure.message, cause.message);
    assert.equal(failure.cause, cause);
  });

  test('anything else is InternalError and retried, with its message', () => {
    const failure = toReconcileError(new TypeError('x is undefined'));
    assert.equal(failure.reason, 'InternalError');
    assert.equal(failure.terminal, false);
    assert.equal(failure.message, 'x is undefined');
    const thrown = toReconcileError('a string');
    assert.equal(thrown.reason, 'InternalError');
    assert.equal(thrown.message, 'a string');
    assert.equal(thrown.cause, 'a string');
  });
});

describe('withoutSecrets', () => {
  test('every Secret value in the message is redacted, every time, and the cause goes', () => {
    const failure = new ReconcileError('CloudRejected', 'bad token hunter2 (hunter2) for s3cret', {
      terminal: true,
      cause: new Error('raw hunter2'),
    });
    const scrubbed = withoutSecrets(failure, new Set(['hunter2', 's3cret', 'absent']));
    assert.equal(scrubbed.message, 'bad token [redacted] ([redacted]) for [redacted]');
    assert.equal(scrubbed.reason, 'CloudRejected');
    assert.equal(scrubbed.terminal, true);
    assert.equal(scrubbed.cause, undefined);
    const retried = withoutSecrets(
      new ReconcileError('CloudUnavailable', 'echo hunter2', { terminal: false }),
      new Set(['hunter2']),
    );
    assert.equal(retried.terminal, false);
  });

  test('a message with no Secret value, or only empty values, is the failure itself', () => {
    const failure = new ReconcileError('CloudRejected', 'nothing secret', { terminal: true });
    assert.equal(withoutSecrets(failure, new Set(['hunter2'])), failure);
    assert.equal(withoutSecrets(failure, new Set([''])), failure);
    assert.equal(withoutSecrets(failure, new Set()), failure);
  });
});

describe('apiserver answers', () => {
  test('409 is a conflict and 404 is gone; nothing else is either', () => {
    const conflict = new KubeApiError('PATCH', 'p', 409, 'Conflict', '');
    const gone = new KubeApiError('PATCH', 'p', 404, 'NotFound', '');
    assert.equal(isConflict(conflict), true);
    assert.equal(isConflict(gone), false);
    assert.equal(isNotFound(gone), true);
    assert.equal(isNotFound(conflict), false);
    const plain = Object.assign(new Error('x'), { status: 409 });
    assert.equal(isConflict(plain), false);
    assert.equal(isNotFound(Object.assign(new Error('x'), { status: 404 })), false);
  });
});
