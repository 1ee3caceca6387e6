import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CREATE_INTENT, CREATE_NAME } from '../../src/managed/core/annotations.ts';
import { ReconcileError } from '../../src/managed/core/errors.ts';
import type { ManagedObject } from '../../src/managed/core/external-kind.ts';
import { TerminalFailures } from '../../src/managed/reporting/terminal-failures.ts';
import { ConnectionSecrets } from '../../src/managed/secrets/connection-secret.ts';
import { resolveEnv } from '../../src/managed/secrets/secrets.ts';
import { FakeApi } from './fakes.ts';

// Secret values into env, connection details out to a Secret, and terminal failures held per resource.

/** A Secret reader over `secrets` (namespace/name → data) that counts its reads. */
function reader(secrets: Record<string, Record<string, string>>) {
  const reads: string[] = [];
  return {
    reads,
    read: async (namespace: string, name: string) => {
      reads.push(`${namespace}/${name}`);
      return secrets[`${namespace}/${name}`];
    },
  };
}

async function failure(promise: Promise<unknown>): Promise<ReconcileError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof ReconcileError);
    return error;
  }
  assert.fail('expected a failure');
}

describe('resolveEnv', () => {
  test('literal values pass, Secret values are read once per Secret and revealed', async () => {
    const secrets = reader({ 'ns-a/db': { user: 'admin', password: 'hunter2' } });
    const revealed: string[] = [];
    const env = await resolveEnv(
      'ns-a',
      [
        { key: 'PLAIN', value: 'x' },
        { key: 'EMPTY' },
        { key: 'USER', valueFrom: { secretKeyRef: { name: 'db', key: 'user' } } },
        { key: 'PASS', valueFrom: { secretKeyRef: { name: 'db', key: 'password' } } },
        { key: 'BOTH', value: 'literal wins', valueFrom: { secretKeyRef: { name: 'db', key: 'user' } } },
      ],
      secrets.read,
      (value) => revealed.push(value),
    );
    assert.deepEqual(env, [
      { key: 'PLAIN', value: 'x' },
      { key: 'EMPTY', value: '' },
      { key: 'USER', value: 'admin' },
      { key: 'PASS', value: 'hunter2' },
      { key: 'BOTH', value: 'literal wins' },
    ]);
    assert.deepEqual(secrets.reads, ['ns-a/db']);
    assert.deepEqual(revealed, ['admin', 'hunter2']);
  });

  test('no items resolve to nothing', async () => {
    const secrets = reader({});
    assert.deepEqual(await resolveEnv('ns-a', undefined, secrets.read, () => {}), []);
    assert.deepEqual(secrets.reads, []);
  });

  test('a missing Secret is SecretNotFound, retried, naming the Secret and namespace', async () => {
    const error = await failure(
      resolveEnv(
        'ns-a',
        [{ key: 'PASS', valueFrom: { secretKeyRef: { name: 'db', key: 'password' } } }],
        reader({ 'ns-b/db': { password: 'p' } }).read,
        () => {},
      ),
    );
    assert.equal(error.reason, 'SecretNotFound');
    assert.equal(error.terminal, false);
    assert.equal(
      error.message,
      'env PASS: Secret "db" does not exist in namespace "ns-a"; create it and the resource will be retried',
    );
  });

  test('a missing key is SecretKeyNotFound, retried, and no value is revealed', async () => {
    const revealed: string[] = [];
    const error = await failure(
      resolveEnv(
        'ns-a',
        [{ key: 'PASS', valueFrom: { secretKeyRef: { name: 'db', key: 'password' } } }],
        reader({ 'ns-a/db': { user: 'admin' } }).read,
        (value) => revealed.push(value),
      ),
    );
    assert.equal(error.reason, 'SecretKeyNotFound');
    assert.equal(error.terminal, false);
    assert.equal(error.message, 'env PASS: Secret "db" in namespace "ns-a" has no key "password"');
    assert.deepEqual(revealed, []);
  });
});

function resource(
  uid: string,
  extra: Partial<ManagedObject<unknown>['metadata']> = {},
): ManagedObject<unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Widget',
    metadata: { namespace: 'ns-a', name: 'w', uid, generation: 1, resourceVersion: '1', ...extra },
    spec: {},
  };
}

describe('connection Secrets', () => {
  test('written once while the data is unchanged; written again when it changes, in any key order', async () => {
    const api = new FakeApi();
    let writes = 0;
    const writer = {
      ...api.writer,
      writeOwnedSecret: (...args: Parameters<typeof api.writer.writeOwnedSecret>) => {
        writes++;
        return api.writer.writeOwnedSecret(...args);
      },
    };
    const secrets = new ConnectionSecrets(writer);
    const mr = resource('uid-1');
    assert.equal(await secrets.publish(mr, 'conn', { a: '1', b: '2' }), undefined);
    assert.equal(await secrets.publish(mr, 'conn', { b: '2', a: '1' }), undefined);
    assert.equal(writes, 1, 'the same data in another order is not written again');
    await secrets.publish(mr, 'conn', { a: '1', b: '3' });
    assert.equal(writes, 2);
    assert.deepEqual(api.secrets.get('ns-a/conn')?.data, { a: '1', b: '3' });
    await secrets.publish(mr, 'other', { a: '1', b: '3' });
    assert.equal(writes, 3, 'another Secret name is another write');
    await secrets.publish(resource('uid-2', { name: 'v' }), 'conn2', { a: '1', b: '3' });
    assert.equal(writes, 4, 'another resource is another write');
    secrets.forget('uid-1');
    await secrets.publish(mr, 'other', { a: '1', b: '3' });
    assert.equal(writes, 5, 'a forgotten resource is written again');
  });

  test('a Secret the resource does not own is refused, not overwritten, and asked again next time', async () => {
    const api = new FakeApi();
    api.secrets.set('ns-a/taken', { data: { mine: 'yes' }, owner: 'someone' });
    let writes = 0;
    const writer = {
      ...api.writer,
      writeOwnedSecret: (...args: Parameters<typeof api.writer.writeOwnedSecret>) => {
        writes++;
        return api.writer.writeOwnedSecret(...args);
      },
    };
    const secrets = new ConnectionSecrets(writer);
    const mr = resource('uid-1');
    const refused = await secrets.publish(mr, 'taken', { id: '1' });
    assert.equal(refused?.reason, 'ConnectionSecretNotOwned');
    assert.equal(refused?.terminal, false);
    assert.equal(
      refused?.message,
      'Secret taken exists and is not controlled by this resource, so its connection details are not ' +
        'written there: delete that Secret, or name another in spec.writeConnectionSecretToRef',
    );
    assert.deepEqual(api.secrets.get('ns-a/taken')?.data, { mine: 'yes' });
    await secrets.publish(mr, 'taken', { id: '1' });
    assert.equal(writes, 2, 'a refusal is not remembered as written');
    api.secrets.delete('ns-a/taken');
    assert.equal(await secrets.publish(mr, 'taken', { id: '1' }), undefined);
    assert.deepEqual(api.secrets.get('ns-a/taken')?.data, { id: '1' });
  });

  test('a refusal after a write forgets the write: the Secret is written when it is free again', async () => {
    const api = new FakeApi();
    let writes = 0;
    const writer = {
      ...api.writer,
      writeOwnedSecret: (...args: Parameters<typeof api.writer.writeOwnedSecret>) => {
        writes++;
        return api.writer.writeOwnedSecret(...args);
      },
    };
    const secrets = new ConnectionSecrets(writer);
    const mr = resource('uid-1');
    await secrets.publish(mr, 'a', { id: '1' });
    api.secrets.set('ns-a/b', { data: {}, owner: 'someone' });
    assert.ok(await secrets.publish(mr, 'b', { id: '1' }));
    api.secrets.delete('ns-a/a');
    await secrets.publish(mr, 'a', { id: '1' });
    assert.equal(writes, 3);
    assert.deepEqual(api.secrets.get('ns-a/a')?.data, { id: '1' });
  });
});

describe('terminal failures', () => {
  test('held until the generation, the annotations or the deletion change; not by the create bookkeeping', () => {
    const failures = new TerminalFailures(() => 0);
    const failed = resource('uid-1', { annotations: { note: 'a' } });
    assert.equal(failures.holds(failed), false);
    failures.record(failed);
    assert.equal(failures.holds(failed), true);
    const bookkept = resource('uid-1', {
      annotations: { note: 'a', [CREATE_INTENT]: 'x', [CREATE_NAME]: 'w' },
      resourceVersion: '9',
    });
    assert.equal(failures.holds(bookkept), true, 'the operator’s own intent write does not retry it');
    assert.equal(failures.holds(resource('uid-1', { annotations: { note: 'a' }, generation: 2 })), false);
    assert.equal(failures.holds(resource('uid-1', { annotations: { note: 'b' } })), false);
    assert.equal(failures.holds(resource('uid-1')), false);
    assert.equal(
      failures.holds(
        resource('uid-1', { annotations: { note: 'a' }, deletionTimestamp: '2026-01-01T00:00:00Z' }),
      ),
      false,
    );
    assert.equal(failures.holds(resource('uid-2', { annotations: { note: 'a' } })), false, 'per resource');
    failures.forget('uid-1');
    assert.equal(failures.holds(failed), false);
  });

  test('held only while the account it names is unchanged; the keys refused on an account are known', () => {
    const revisions = new Map<string, number>();
    const failures = new TerminalFailures((account) => revisions.get(account) ?? 0);
    const failed = resource('uid-1');
    failures.record(failed);
    assert.deepEqual(failures.keysOn('default'), [`${failed.metadata.namespace}/${failed.metadata.name}`]);
    assert.deepEqual(failures.keysOn('other'), []);
    revisions.set('other', 1);
    assert.equal(failures.holds(failed), true, 'another account changed');
    revisions.set('default', 1);
    assert.equal(failures.holds(failed), false, 'its account changed: looked at again');
  });
});
