import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { test } from 'node:test';
import { CoreV1Api } from '@kubernetes/client-node';
import { resolveControlPlaneBinary } from '../../src/local/controlplane/binary.ts';
import {
  CONTROLPLANE_BIN_ENV,
  type ControlPlane,
  ControlPlaneBinaryMissingError,
  ControlPlaneError,
  startControlPlane,
} from '../../src/local/controlplane.ts';
import { useControlPlane } from '../support/control-plane.ts';
import { processesUsing, waitForNoProcessesUsing } from './processes.ts';

const shared = useControlPlane();
const FIXTURE = join(import.meta.dirname, 'fixtures', 'abandoned-plane.ts');

test('restarting the apiserver keeps the data in etcd', async () => {
  const plane = shared();
  const core = plane.kubeConfig.makeApiClient(CoreV1Api);
  const created = await core.createNamespacedConfigMap({
    namespace: 'default',
    body: { metadata: { name: 'survivor' }, data: { kept: 'yes' } },
  });
  await plane.stopApiserver();
  await assert.rejects(
    core.readNamespacedConfigMap({ namespace: 'default', name: 'survivor' }),
    isConnectionRefused,
  );
  await plane.startApiserver();
  const read = await core.readNamespacedConfigMap({ namespace: 'default', name: 'survivor' });
  assert.equal(read.metadata?.uid, created.metadata?.uid);
  assert.deepEqual(read.data, { kept: 'yes' });
});

test('stop() ends every server, removes the temporary data directory, and may be called again', async () => {
  const plane = await startControlPlane({ apiserverEnv: { GOGC: '150' } });
  try {
    const servers = await processesUsing(plane.dataDir);
    assert.equal(servers.length, 2, 'etcd and kube-apiserver should be running');
    // The apiserver's environment is its own: etcd does not get it.
    const gogc = await Promise.all(
      servers.map(async (pid) => {
        const [mode] = (await readFile(`/proc/${pid}/cmdline`, 'utf8')).split('\0').slice(1);
        const environment = (await readFile(`/proc/${pid}/environ`, 'utf8')).split('\0');
        return [mode, environment.find((entry) => entry.startsWith('GOGC='))];
      }),
    );
    assert.deepEqual(Object.fromEntries(gogc), {
      apiserver: 'GOGC=150',
      etcd: process.env.GOGC === undefined ? undefined : `GOGC=${process.env.GOGC}`,
    });
  } finally {
    await plane.stop();
  }
  assert.deepEqual(await processesUsing(plane.dataDir), []);
  assert.equal(existsSync(plane.dataDir), false);
  await plane.stop();
});

test('a plane on a given data directory keeps it, and its state, across stop and start', async () => {
  const dataDir = await mkdtemp(join(tmpdir(), 'controlplane-test-'));
  try {
    await withPlane(dataDir, async (plane) => {
      await plane.kubeConfig
        .makeApiClient(CoreV1Api)
        .createNamespace({ body: { metadata: { name: 'persisted' } } });
    });
    assert.deepEqual(await processesUsing(dataDir), []);
    await withPlane(dataDir, async (plane) => {
      const namespace = await plane.kubeConfig.makeApiClient(CoreV1Api).readNamespace({ name: 'persisted' });
      assert.equal(namespace.status?.phase, 'Active');
    });
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
});

test('a server that fails to start is reported with the end of its log, and nothing is left running', async () => {
  const dataDir = await mkdtemp(join(tmpdir(), 'controlplane-test-'));
  try {
    await assert.rejects(
      startControlPlane({ dataDir, apiserverFlags: ['--no-such-flag'] }),
      (error: unknown) =>
        error instanceof ControlPlaneError &&
        error.component === 'apiserver' &&
        /exited with code \d+ while starting/.test(error.message) &&
        error.logTail.includes('unknown flag: --no-such-flag'),
    );
    assert.deepEqual(await processesUsing(dataDir), []);
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
});

test('the servers exit when the process that started them is killed', async () => {
  const owner = spawn(process.execPath, [FIXTURE], { stdio: ['ignore', 'pipe', 'inherit'] });
  let dataDir: string | undefined;
  try {
    dataDir = await firstLine(owner);
    assert.equal((await processesUsing(dataDir)).length, 2, 'etcd and kube-apiserver should be running');
    owner.kill('SIGKILL');
    await waitForNoProcessesUsing(dataDir, 30_000);
  } finally {
    owner.kill('SIGKILL');
    if (dataDir) await cleanUpAbandoned(dataDir);
  }
});

test('a missing binary named by the override is reported as such', async (t) => {
  t.after(() => {
    delete process.env[CONTROLPLANE_BIN_ENV];
  });
  process.env[CONTROLPLANE_BIN_ENV] = '/nonexistent/controlplane';
  await assert.rejects(
    resolveControlPlaneBinary(),
    (error: unknown) =>
      error instanceof ControlPlaneBinaryMissingError &&
      error.binaryPath === '/nonexistent/controlplane' &&
      error.message.includes(CONTROLPLANE_BIN_ENV),
  );
});

function isConnectionRefused(error: unknown): boolean {
  return (
    error instanceof Error &&
    error.cause instanceof Error &&
    'code' in error.cause &&
    error.cause.code === 'ECONNREFUSED'
  );
}

async function withPlane(dataDir: string, use: (plane: ControlPlane) => Promise<void>): Promise<void> {
  const plane = await startControlPlane({ dataDir });
  try {
    await use(plane);
  } finally {
    await plane.stop();
  }
}

/** The first line the child prints, or an error if it exits first. */
function firstLine(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    if (!child.stdout) throw new Error('the child has no stdout pipe');
    createInterface({ input: child.stdout }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`the fixture exited with code ${code} before printing`)));
  });
}

/** Even if the watchdog failed, leave nothing behind: kill what this test started, then remove its files. */
async function cleanUpAbandoned(dataDir: string): Promise<void> {
  for (const pid of await processesUsing(dataDir)) process.kill(pid, 'SIGKILL');
  await waitForNoProcessesUsing(dataDir, 10_000);
  await rm(dataDir, { recursive: true, force: true });
}
