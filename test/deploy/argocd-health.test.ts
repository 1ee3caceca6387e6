import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { load } from 'js-yaml';
import { API_VERSION, GROUP, type ManagedKindName, managedKinds } from '../../src/resources/kinds.ts';
import { ARGOCD_DIR, healthScriptPath } from '../../tools/argocd-health/artifacts.ts';
import { ensureHealthRunner } from '../../tools/argocd-health/ensure.ts';
import { REPO_ROOT } from '../../tools/helm/artifacts.ts';

// The Argo CD health checks, run by gopher-lua as Argo CD runs them, on a sample object for every outcome
// of every kind.

const execFileAsync = promisify(execFile);
const runner = await ensureHealthRunner();
const scratch = await mkdtemp(join(tmpdir(), 'gpucloud-argocd-health-'));
after(() => rm(scratch, { recursive: true, force: true }));

interface Health {
  status: string;
  message: string;
}

let samples = 0;
async function health(script: string, object: unknown): Promise<Health> {
  const file = join(scratch, `object-${samples++}.json`);
  await writeFile(file, JSON.stringify(object));
  const { stdout } = await execFileAsync(runner, [script, file]);
  return JSON.parse(stdout) as Health;
}

interface Condition {
  type: 'Ready' | 'Synced';
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
  observedGeneration?: number;
}

interface SampleOptions {
  generation?: number;
  observedGeneration?: number;
  phase?: string;
  conditions?: Condition[];
  spec?: Record<string, unknown>;
  deleting?: boolean;
  status?: Record<string, unknown>;
}

/** A custom resource as the operator leaves it: status written for `observedGeneration`. */
function sample(kind: ManagedKindName, options: SampleOptions = {}): Record<string, unknown> {
  const generation = options.generation ?? 1;
  return {
    apiVersion: API_VERSION,
    kind,
    metadata: {
      name: 'sample',
      namespace: 'default',
      generation,
      ...(options.deleting
        ? { deletionTimestamp: '2026-01-01T00:00:00Z', finalizers: ['gpucloud.io/finalizer'] }
        : {}),
    },
    spec: { image: 'example/image:1', ...options.spec },
    status: {
      id: '1001',
      phase: options.phase ?? 'RUNNING',
      observedGeneration: options.observedGeneration ?? generation,
      conditions: (options.conditions ?? []).map((condition) => ({
        lastTransitionTime: '2026-01-01T00:00:00Z',
        observedGeneration: generation,
        ...condition,
      })),
      ...options.status,
    },
  };
}

const ready = (reason = 'Running', message = 'the resource is running'): Condition => ({
  type: 'Ready',
  status: 'True',
  reason,
  message,
});
const notReady = (reason: string, message: string): Condition => ({
  type: 'Ready',
  status: 'False',
  reason,
  message,
});
const synced: Condition = { type: 'Synced', status: 'True', reason: 'ReconcileSuccess', message: '' };
const syncFailed = (reason: string, message: string): Condition => ({
  type: 'Synced',
  status: 'False',
  reason,
  message,
});

const TERMINAL_REASONS = [
  'InvalidSpec',
  'CloudRejected',
  'CloudRequestInvalid',
  'PermissionDenied',
  'ExternalResourceNotFound',
];

for (const { kind } of managedKinds) {
  describe(`${kind} health`, () => {
    const script = join(REPO_ROOT, healthScriptPath(kind));
    const check = async (object: Record<string, unknown>, expected: Health) =>
      assert.deepEqual(await health(script, object), expected);

    test('Progressing before the operator has written a status', async () => {
      const { status: _, ...fresh } = sample(kind);
      await check(fresh, {
        status: 'Progressing',
        message: 'Waiting for the operator to pick up the resource',
      });
    });

    test('Progressing while the operator has not acted on the latest spec', async () => {
      await check(sample(kind, { generation: 3, observedGeneration: 2, conditions: [ready(), synced] }), {
        status: 'Progressing',
        message: 'Waiting for the operator to act on generation 3',
      });
    });

    test('Progressing while the cloud starts the resource', async () => {
      const conditions = [notReady('Initializing', 'the cloud is starting it'), synced];
      await check(sample(kind, { phase: 'INITIALIZING', conditions }), {
        status: 'Progressing',
        message: 'Initializing: the cloud is starting it',
      });
    });

    test('Healthy when Ready for the current generation', async () => {
      await check(sample(kind, { conditions: [ready(), synced] }), {
        status: 'Healthy',
        message: 'Running: the resource is running',
      });
    });

    test('Progressing, not Healthy, when Ready describes an older spec and the new one is being retried', async () => {
      const object = sample(kind, {
        generation: 2,
        conditions: [
          { ...ready(), observedGeneration: 1 },
          syncFailed('CloudUnavailable', 'the cloud answered 503'),
        ],
      });
      await check(object, {
        status: 'Progressing',
        message: 'Retrying after CloudUnavailable: the cloud answered 503',
      });
    });

    test('Progressing while a retryable failure is retried', async () => {
      const conditions = [notReady('Initializing', 'waiting'), syncFailed('CloudUnavailable', 'timed out')];
      await check(sample(kind, { phase: 'INITIALIZING', conditions }), {
        status: 'Progressing',
        message: 'Retrying after CloudUnavailable: timed out',
      });
    });

    for (const reason of TERMINAL_REASONS) {
      test(`Degraded on the terminal failure ${reason}`, async () => {
        const conditions = [notReady('Initializing', 'waiting'), syncFailed(reason, 'fix the spec')];
        await check(sample(kind, { phase: 'INITIALIZING', conditions }), {
          status: 'Degraded',
          message: `${reason}: fix the spec`,
        });
      });
    }

    for (const phase of ['FAILED', 'DEGRADED']) {
      test(`Degraded when the cloud reports ${phase}`, async () => {
        const conditions = [notReady('Failed', `the cloud reports ${phase}`), synced];
        await check(sample(kind, { phase, conditions }), {
          status: 'Degraded',
          message: `Failed: the cloud reports ${phase}`,
        });
      });
    }

    test('Progressing while the resource is being deleted', async () => {
      await check(sample(kind, { deleting: true, conditions: [ready(), synced] }), {
        status: 'Progressing',
        message: 'Waiting for the operator to delete the cloud resource',
      });
    });
  });
}

describe('Suspended', () => {
  const script = (kind: ManagedKindName) => join(REPO_ROOT, healthScriptPath(kind));

  test('a GpuPod paused on purpose and PAUSED', async () => {
    const object = sample('GpuPod', {
      phase: 'PAUSED',
      spec: { paused: true },
      conditions: [ready('Paused', 'the pod is paused as asked'), synced],
    });
    assert.deepEqual(await health(script('GpuPod'), object), {
      status: 'Suspended',
      message: 'The pod is paused (spec.paused)',
    });
  });

  test('a GpuPod paused by the operator, its spec untouched, whatever phase it is in', async () => {
    const pausedBy = { reason: 'Idle', message: 'every GPU stayed below 5% utilisation for 30 minutes' };
    for (const phase of ['RUNNING', 'PAUSED']) {
      const object = sample('GpuPod', {
        phase,
        spec: { paused: false },
        status: { pausedBy: { ...pausedBy, since: '2026-01-01T00:00:00Z', generation: 1 } },
        conditions: [notReady('Idle', pausedBy.message), synced],
      });
      assert.deepEqual(await health(script('GpuPod'), object), {
        status: 'Suspended',
        message: `Paused by the operator (Idle): ${pausedBy.message}`,
      });
    }
  });

  test('a GpuPod asked to pause but still RUNNING is Progressing', async () => {
    const object = sample('GpuPod', {
      phase: 'RUNNING',
      spec: { paused: true },
      conditions: [notReady('Pausing', 'pausing the pod'), synced],
    });
    assert.deepEqual(await health(script('GpuPod'), object), {
      status: 'Progressing',
      message: 'Pausing: pausing the pod',
    });
  });

  test('a GpuPod PAUSED but asked to run is Progressing (being resumed)', async () => {
    const object = sample('GpuPod', {
      phase: 'PAUSED',
      spec: { paused: false },
      conditions: [notReady('Paused', 'the pod is paused'), synced],
    });
    assert.equal((await health(script('GpuPod'), object)).status, 'Progressing');
  });

  test('a ServerlessEndpoint stopped on purpose and STOPPED', async () => {
    const object = sample('ServerlessEndpoint', {
      phase: 'STOPPED',
      spec: { stopped: true },
      conditions: [ready('Stopped', 'the endpoint is stopped as asked'), synced],
    });
    assert.deepEqual(await health(script('ServerlessEndpoint'), object), {
      status: 'Suspended',
      message: 'The endpoint is stopped (spec.stopped)',
    });
  });

  test('a ServerlessEndpoint asked to stop but still STOPPING is Progressing', async () => {
    const object = sample('ServerlessEndpoint', {
      phase: 'STOPPING',
      spec: { stopped: true },
      conditions: [notReady('Stopping', 'the cloud is stopping the endpoint'), synced],
    });
    assert.equal((await health(script('ServerlessEndpoint'), object)).status, 'Progressing');
  });

  test('a GpuVm is never Suspended: it has no spec field to ask for it', async () => {
    const object = sample('GpuVm', {
      phase: 'STOPPED',
      spec: { paused: true, stopped: true },
      conditions: [notReady('Stopped', 'the VM is stopped'), synced],
    });
    assert.deepEqual(await health(script('GpuVm'), object), {
      status: 'Progressing',
      message: 'Stopped: the VM is stopped',
    });
  });
});

describe('the argocd-cm patch', async () => {
  const patch = load(await readFile(join(REPO_ROOT, ARGOCD_DIR, 'argocd-cm-patch.yaml'), 'utf8')) as {
    metadata: { name: string; namespace: string };
    data: Record<string, string>;
  };

  test('patches argocd-cm with one health check per kind, under the keys Argo CD looks up', () => {
    assert.equal(patch.metadata.name, 'argocd-cm');
    assert.deepEqual(
      Object.keys(patch.data).sort(),
      managedKinds.map(({ kind }) => `resource.customizations.health.${GROUP}_${kind}`).sort(),
    );
  });

  test('embeds each health.lua verbatim, so the tested scripts are the installed ones', async () => {
    for (const { kind } of managedKinds) {
      const embedded = patch.data[`resource.customizations.health.${GROUP}_${kind}`];
      assert.equal(embedded, await readFile(join(REPO_ROOT, healthScriptPath(kind)), 'utf8'), kind);
    }
  });
});
