import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { isStatus } from '../../src/kube/client.ts';
import { objectPath } from '../../src/kube/resource-type.ts';
import type { ManagedObject } from '../../src/managed/core/external-kind.ts';
import { NotLeaderError } from '../../src/managed/core/fence.ts';
import { managedWriter } from '../../src/managed/core/writer.ts';
import { TurnCopies } from '../../src/managed/reconciler/turn-copies.ts';
import { FakeApiserver, widgets } from './fake-apiserver.ts';

/** The real writer on the fake apiserver (a stale version is a 409), followed by `TurnCopies`. */
function world() {
  const api = new FakeApiserver();
  const lease = { mine: true };
  const turns = new TurnCopies(managedWriter(api, widgets), { kind: 'Widget', mayAct: () => lease.mine });
  const path = objectPath(widgets, { namespace: 'team-a', name: 'w' });
  const read = api.put(path, {
    apiVersion: 'example.com/v1',
    kind: 'Widget',
    metadata: { name: 'w', namespace: 'team-a' },
    spec: { size: 1 },
    status: { phase: 'PENDING' },
  }) as unknown as ManagedObject<unknown>;
  const stored = () => api.get(path) as unknown as ManagedObject<unknown>;
  return { api, lease, turns, read, stored, writer: turns.writer };
}

describe('TurnCopies: the writes of a turn in flight', () => {
  test('a failure report after a status write starts from that write, and the apiserver takes it', async () => {
    const { turns, read, stored, writer } = world();
    turns.begin(read.metadata.uid);
    await writer.patchStatus(read, { phase: 'CREATING' });
    // The copy the turn began with is stale now: the apiserver refuses a status derived from it.
    await assert.rejects(writer.patchStatus(read, { phase: 'FAILED' }), (e) => isStatus(e, 409));
    const latest = turns.latest(read);
    assert.equal(latest.metadata.resourceVersion, stored().metadata.resourceVersion);
    assert.deepEqual(latest.status, { phase: 'CREATING' });
    await writer.patchStatus(latest, { phase: 'FAILED' });
    assert.deepEqual(stored().status, { phase: 'FAILED' });
  });

  test('a metadata write after a status write keeps that status and carries the new version', async () => {
    const { turns, read, stored, writer } = world();
    turns.begin(read.metadata.uid);
    await writer.patchStatus(read, { phase: 'CREATING' });
    await writer.patchObject(turns.latest(read), { annotations: { note: 'x' } });
    const latest = turns.latest(read);
    assert.equal(latest.metadata.resourceVersion, stored().metadata.resourceVersion);
    assert.equal(latest.metadata.annotations?.note, 'x');
    assert.deepEqual(latest.status, { phase: 'CREATING' }, 'the status this turn wrote, not the one read');
  });

  test('a metadata write first: the status is the one read until the turn writes one', async () => {
    const { turns, read, writer } = world();
    turns.begin(read.metadata.uid);
    await writer.patchObject(read, { annotations: { note: 'x' } });
    assert.deepEqual(turns.latest(read).status, { phase: 'PENDING' });
  });

  test('a copy with no turn, or after its turn ended, is answered as read', async () => {
    const { turns, read, writer } = world();
    assert.equal(turns.latest(read), read);
    turns.begin(read.metadata.uid);
    await writer.patchStatus(read, { phase: 'CREATING' });
    turns.end(read.metadata.uid);
    assert.equal(turns.latest(read), read, 'nothing of a turn outlives it');
  });

  test('writes outside a turn go through, with no signal', async () => {
    const { api, read, stored, writer } = world();
    await writer.patchStatus(read, { phase: 'CREATING' });
    await writer.patchObject(stored(), { annotations: { note: 'x' } });
    await writer.deleteObject(stored());
    assert.deepEqual(
      api.requests.map((request) => [request.method, request.signal]),
      [
        ['PATCH', undefined],
        ['PATCH', undefined],
        ['DELETE', undefined],
      ],
    );
  });

  test("every write of a turn carries the turn's signal; once aborted, nothing is sent", async () => {
    const { api, turns, read, writer } = world();
    const controller = new AbortController();
    turns.begin(read.metadata.uid, controller.signal);
    await writer.patchStatus(read, { phase: 'CREATING' });
    await writer.patchObject(turns.latest(read), { annotations: { note: 'x' } });
    await writer.deleteObject(turns.latest(read));
    assert.deepEqual(
      api.requests.map((request) => request.signal),
      [controller.signal, controller.signal, controller.signal],
    );
    controller.abort(new Error('lease lost'));
    const sent = api.requests.length;
    await assert.rejects(writer.patchStatus(read, { phase: 'FAILED' }), /lease lost/);
    assert.equal(api.requests.length, sent, 'refused before a request');
  });

  test('a process that may no longer lead sends no write at all', async () => {
    const { api, lease, turns, read, writer } = world();
    turns.begin(read.metadata.uid);
    lease.mine = false;
    for (const write of [
      () => writer.patchStatus(read, { phase: 'CREATING' }),
      () => writer.patchObject(read, { annotations: { note: 'x' } }),
      () => writer.deleteObject(read),
    ]) {
      await assert.rejects(
        write(),
        (error) =>
          error instanceof NotLeaderError && /not changing any Widget in the cluster/.test(error.message),
      );
    }
    assert.equal(api.requests.length, 0);
  });
});

describe('TurnCopies: a copy older than this process’s own write', () => {
  test('is put off until the cache shows the write, then every copy goes on', async () => {
    const { turns, read, stored, writer } = world();
    const written = await writer.patchStatus(read, { phase: 'CREATING' });
    assert.equal(turns.precedesOwnWrite(read), true, 'the copy the write was made from is stale');
    assert.equal(turns.size, 1);
    assert.equal(turns.caughtUp(read), false, 'an event of the old version wakes nothing');
    assert.equal(turns.caughtUp(stored()), true, 'the event of the write wakes the turn put off');
    assert.equal(stored().metadata.resourceVersion, written);
    assert.equal(turns.precedesOwnWrite(stored()), false);
    assert.equal(turns.size, 0, 'nothing is kept once the cache passed the write');
    assert.equal(turns.caughtUp(stored()), false, 'no turn waits any more');
  });

  test('a chain of writes: only a copy past the last of them goes on', async () => {
    const { turns, read, stored, writer } = world();
    turns.begin(read.metadata.uid);
    await writer.patchStatus(read, { phase: 'CREATING' });
    const between = { ...read, metadata: { ...turns.latest(read).metadata } };
    await writer.patchObject(turns.latest(read), { annotations: { note: 'x' } });
    turns.end(read.metadata.uid);
    assert.equal(turns.precedesOwnWrite(read), true);
    assert.equal(turns.precedesOwnWrite(between), true, 'the version between the two writes is stale too');
    assert.equal(turns.caughtUp(between), false, 'its event is not the last write’s');
    assert.equal(turns.caughtUp(stored()), true);
  });

  test('a copy the cache shows without being put off does not wake anything', async () => {
    const { turns, read, stored, writer } = world();
    await writer.patchStatus(read, { phase: 'CREATING' });
    assert.equal(turns.caughtUp(stored()), false, 'no turn was put off');
    assert.equal(turns.precedesOwnWrite(read), false, 'the cache passed the write: no longer known as stale');
  });

  test('a write that changed nothing made no version to wait for', async () => {
    const { turns, read } = world();
    const unchanged = new TurnCopies(
      {
        ...managedWriter(new FakeApiserver(), widgets),
        patchStatus: async (mr) => mr.metadata.resourceVersion ?? '',
      },
      { kind: 'Widget', mayAct: () => true },
    );
    await unchanged.writer.patchStatus(read, { phase: 'PENDING' });
    assert.equal(unchanged.precedesOwnWrite(read), false);
    assert.equal(turns.size, 0);
  });

  test('a resource forgotten waits for nothing', async () => {
    const { turns, read, stored, writer } = world();
    await writer.patchStatus(read, { phase: 'CREATING' });
    assert.equal(turns.precedesOwnWrite(read), true);
    turns.forget(read.metadata.uid);
    assert.equal(turns.size, 0);
    assert.equal(turns.caughtUp(stored()), false);
  });

  test('the writer it hands out counts the base writer’s own writes as they are now', async () => {
    const { turns, read, writer } = world();
    assert.equal(writer.size, 0);
    await writer.patchObject(read, { annotations: { note: 'x' } });
    assert.equal(writer.size, 1, 'not a copy of the count when the writer was made');
    writer.forget(read.metadata.uid);
    assert.equal(writer.size, 0);
    assert.equal(turns.size, 1);
  });
});
