import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { createInterface } from 'node:readline';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { isStatus, KubeClient } from '../../src/kube/client.ts';
import { LeaseLock } from '../../src/kube/lease-lock.ts';
import { useControlPlane } from '../support/control-plane.ts';
import { eventually } from '../support/eventually.ts';
import { createConfigMap, createNamespace } from '../support/kube.ts';
import { until } from '../support/until.ts';

interface OperatorProcess {
  readonly child: ChildProcess;
  readonly lines: Record<string, unknown>[];
  /** Its log, shown only when a test fails. */
  readonly stderr: string[];
  readonly healthPort: number;
  readonly exited: Promise<number | null>;
}

// Registered before the control plane's hook so that processes die before the apiserver does.
const processes: OperatorProcess[] = [];
after(async () => {
  for (const { child } of processes) if (child.exitCode === null) child.kill('SIGKILL');
  await Promise.all(processes.map((p) => p.exited));
});

const plane = useControlPlane();
const fixture = fileURLToPath(new URL('./fixtures/operator-process.ts', import.meta.url));

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (typeof address !== 'object' || address === null) throw new Error('no port');
  return address.port;
}

async function startOperator(namespace: string, identity: string): Promise<OperatorProcess> {
  const healthPort = await freePort();
  const child = spawn(process.execPath, [fixture], {
    env: {
      ...process.env,
      KUBECONFIG: plane().kubeconfigPath,
      NAMESPACE: namespace,
      IDENTITY: identity,
      HEALTH_PORT: String(healthPort),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: Record<string, unknown>[] = [];
  const stderr: string[] = [];
  createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) =>
    lines.push(JSON.parse(line)),
  );
  createInterface({ input: child.stderr as NodeJS.ReadableStream }).on('line', (line) => stderr.push(line));
  const exited = once(child, 'exit').then(([code]) => code as number | null);
  const operator = { child, lines, stderr, healthPort, exited };
  processes.push(operator);
  return operator;
}

async function get(operator: OperatorProcess, path: string): Promise<{ status: number; body: string }> {
  try {
    const response = await fetch(`http://127.0.0.1:${operator.healthPort}${path}`);
    return { status: response.status, body: await response.text() };
  } catch {
    return { status: 0, body: '' };
  }
}

const leaderStatus = async (operator: OperatorProcess) =>
  /leader_election_master_status\{name="operator"\} (\d)/.exec((await get(operator, '/metrics')).body)?.[1];

const reported = (operator: OperatorProcess, line: Record<string, unknown>) =>
  operator.lines.some((l) => Object.entries(line).every(([k, v]) => l[k] === v));

/** Runs a test body; on failure, shows the operators' logs before failing. */
function withLogsOnFailure(body: () => Promise<void>): () => Promise<void> {
  return async () => {
    try {
      await body();
    } catch (err) {
      for (const [i, p] of processes.entries())
        console.error(`--- operator ${i} log ---\n${p.stderr.join('\n')}`);
      throw err;
    }
  };
}

test(
  'one leader reconciles; SIGTERM drains, releases the lease, exits 0, and the standby takes over',
  withLogsOnFailure(async () => {
    const client = new KubeClient(plane().connection);
    const namespace = await createNamespace(client, 'manager');
    await createConfigMap(client, namespace, 'first');

    const a = await startOperator(namespace, 'a');
    await until(async () => (await get(a, '/readyz')).status === 200, 'a ready');
    await until(() => reported(a, { reconciled: 'first' }), 'a to reconcile the existing ConfigMap');
    assert.equal(await leaderStatus(a), '1');

    const b = await startOperator(namespace, 'b');
    await until(async () => (await get(b, '/readyz')).status === 200, 'the standby ready (caches synced)');
    assert.equal(await leaderStatus(b), '0');
    assert.equal((await get(b, '/healthz')).status, 200);

    await createConfigMap(client, namespace, 'slow', { slowMs: '1500' });
    await until(() => reported(a, { reconciled: 'slow' }), 'a to start the slow reconcile');
    assert.equal(
      b.lines.filter((l) => 'reconciled' in l).length,
      0,
      'the standby never reconciles while a leads',
    );
    a.child.kill('SIGTERM');
    assert.equal(await a.exited, 0);
    assert.ok(
      reported(a, { finished: 'slow', aborted: false }),
      'the in-flight reconcile finished before exit',
    );
    assert.ok(reported(a, { exit: 'graceful' }));

    // The lease lasts 60 s; the bound is far shorter, so b can only take over through the release.
    await until(
      () => reported(b, { reconciled: 'first' }) && reported(b, { reconciled: 'slow' }),
      'b to lead',
      20_000,
    );
    assert.equal(await leaderStatus(b), '1');

    b.child.kill('SIGINT');
    assert.equal(await b.exited, 0);
  }),
);

test(
  'losing the lease aborts the reconcile in progress at once and exits non-zero',
  withLogsOnFailure(async () => {
    const client = new KubeClient(plane().connection);
    const namespace = await createNamespace(client, 'manager-lost');
    const operator = await startOperator(namespace, 'c');
    await until(async () => (await leaderStatus(operator)) === '1', 'c to lead');
    await createConfigMap(client, namespace, 'endless', { slowMs: '600000' });
    await until(() => reported(operator, { reconciled: 'endless' }), 'the long reconcile to start');

    const lock = new LeaseLock(client, { namespace, name: 'operator' });
    // The leader may renew between the intruder's read and its write (a 409): read again, as any lease
    // writer does.
    await eventually(
      async () => {
        const current = await lock.get(5_000);
        assert.ok(current);
        await lock.update(
          current.lease,
          { ...current.record, holderIdentity: 'intruder', renewTime: new Date() },
          5_000,
        );
      },
      { retrying: (error) => isStatus(error, 409) },
    );

    assert.equal(await operator.exited, 1);
    assert.ok(
      reported(operator, { finished: 'endless', aborted: true }),
      'the reconcile saw its signal abort',
    );
    assert.ok(reported(operator, { exit: 'leadership-lost' }));
    assert.equal((await lock.get(5_000))?.record.holderIdentity, 'intruder', 'a lost lease is not released');
  }),
);
