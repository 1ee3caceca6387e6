import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  type ElectionEnd,
  type LeaderElectionOptions,
  LeaderElector,
} from '../../src/controller/leader-election.ts';
import { KubeClient } from '../../src/kube/client.ts';
import { LeaseLock } from '../../src/kube/lease-lock.ts';
import { useControlPlane } from '../support/control-plane.ts';
import { connectionVia, createNamespace } from '../support/kube.ts';
import { captureLogs } from '../support/log-capture.ts';
import { TcpProxy } from '../support/tcp-proxy.ts';
import { until } from '../support/until.ts';

const plane = useControlPlane();
const logs = captureLogs('info');

/** One candidate: its elector, what happened to it, and how to stop it. */
interface Candidate {
  readonly elector: LeaderElector;
  readonly stop: AbortController;
  readonly done: Promise<ElectionEnd>;
  started: number;
  stopped: number;
  leading: AbortSignal | undefined;
  /** Holders this candidate saw in the lease, in order. */
  readonly observed: string[];
}

const candidates: Candidate[] = [];
after(async () => {
  for (const candidate of candidates) candidate.stop.abort();
  await Promise.all(candidates.map((candidate) => candidate.done));
});

function candidate(
  client: KubeClient,
  lease: { namespace: string; name: string },
  identity: string,
  timing: Partial<LeaderElectionOptions> = {},
): Candidate {
  const stop = new AbortController();
  const state = {
    started: 0,
    stopped: 0,
    leading: undefined as AbortSignal | undefined,
    observed: [] as string[],
  };
  const elector = new LeaderElector({
    client,
    lease,
    identity,
    leaseDurationMs: 60_000,
    renewDeadlineMs: 2_000,
    retryPeriodMs: 200,
    logger: logs.logger,
    ...timing,
    onStartedLeading: (signal) => {
      state.started++;
      state.leading = signal;
    },
    onStoppedLeading: () => {
      state.stopped++;
    },
    onNewLeader: (holder) => state.observed.push(holder),
  });
  const entry: Candidate = Object.assign(state, { elector, stop, done: elector.run(stop.signal) });
  candidates.push(entry);
  return entry;
}

describe('LeaderElector on a real Lease', () => {
  let client: KubeClient;
  let namespace: string;
  before(async () => {
    client = new KubeClient(plane().connection);
    namespace = await createNamespace(client, 'lease');
  });

  const holderOf = async (name: string) =>
    (await new LeaseLock(client, { namespace, name }).get(5_000))?.record;

  test('only one of two candidates leads; a graceful stop hands over without waiting for expiry', async () => {
    const lease = { namespace, name: 'handover' };
    const a = candidate(client, lease, 'a');
    await until(() => a.elector.isLeader(), 'a to lead');
    const b = candidate(client, lease, 'b');
    // b must see a's lease and keep waiting: it expires only after 60 s.
    await until(() => b.observed.includes('a'), 'b to see a holding the lease');
    assert.equal((await holderOf('handover'))?.holderIdentity, 'a');
    assert.equal(b.elector.isLeader(), false);
    assert.equal(b.started, 0);

    a.stop.abort();
    assert.equal(await a.done, 'released');
    assert.equal(a.stopped, 1);
    assert.equal(a.leading?.aborted, true);
    // The lease lasts 60 s; the bound below is far shorter, so b can only win through the release.
    await until(() => b.elector.isLeader(), 'b to take over the released lease', 20_000);
    const record = await holderOf('handover');
    assert.equal(record?.holderIdentity, 'b');
    assert.equal(record?.leaseTransitions, 1);
    assert.equal(a.elector.isLeader(), false);
    assert.deepEqual(b.observed, ['a', 'b']);
  });

  test('a leader that cannot renew within the deadline stops leading; the other takes over after expiry', async () => {
    const proxy = await TcpProxy.start(new URL(plane().server));
    try {
      const lease = { namespace, name: 'partition' };
      const timing = { leaseDurationMs: 3_000, renewDeadlineMs: 2_000, retryPeriodMs: 200 };
      const isolated = candidate(
        new KubeClient(connectionVia(plane(), proxy.url)),
        lease,
        'isolated',
        timing,
      );
      await until(() => isolated.elector.isLeader(), 'the first leader');
      const other = candidate(client, lease, 'other', timing);
      proxy.cut();
      assert.equal(await isolated.done, 'lost');
      assert.equal(isolated.stopped, 1);
      assert.equal(isolated.leading?.aborted, true);
      await until(() => other.elector.isLeader(), 'the other candidate to lead');
      assert.equal((await holderOf('partition'))?.holderIdentity, 'other');
    } finally {
      await proxy.close();
    }
  });

  test('a leader frozen past its renew deadline is no leader the moment it resumes', async () => {
    const lease = { namespace, name: 'frozen' };
    const timing = { leaseDurationMs: 3_000, renewDeadlineMs: 1_000, retryPeriodMs: 200 };
    const frozen = candidate(client, lease, 'frozen', timing);
    await until(() => frozen.elector.isLeader(), 'the leader');
    // Block the event loop, as a stopped process would be: no renew loop, no timer runs meanwhile.
    const resumeAt = Date.now() + 1_200;
    while (Date.now() < resumeAt) {
      // frozen
    }
    // Asked first thing on resuming, before any timer or I/O callback: the lease is not certain.
    assert.equal(frozen.elector.isLeader(), false);
    assert.equal(await frozen.done, 'lost');
  });

  test('a leader that sees another holder in the lease stops leading at once', async () => {
    const lease = { namespace, name: 'usurped' };
    const leader = candidate(client, lease, 'leader');
    await until(() => leader.elector.isLeader(), 'the leader');
    const lock = new LeaseLock(client, lease);
    const current = await lock.get(5_000);
    assert.ok(current);
    const now = new Date();
    await lock.update(
      current.lease,
      { ...current.record, holderIdentity: 'intruder', renewTime: now, acquireTime: now },
      5_000,
    );
    assert.equal(await leader.done, 'lost');
    assert.equal(leader.leading?.aborted, true);
    assert.equal(leader.stopped, 1);
    assert.equal((await holderOf('usurped'))?.holderIdentity, 'intruder', 'a lost leader does not release');
  });

  test('refuses timings that cannot work', () => {
    assert.throws(
      () =>
        new LeaderElector({
          client,
          lease: { namespace, name: 'x' },
          logger: logs.logger,
          leaseDurationMs: 5_000,
          renewDeadlineMs: 6_000,
          onStartedLeading() {},
        }),
      /leaseDuration > renewDeadline/,
    );
  });
});
