import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { audit } from '../../chaos/audit.ts';
import { CloudHistory } from '../../chaos/cloud-objects.ts';
import { convergenceProblem } from '../../chaos/convergence.ts';
import { Ledger } from '../../chaos/ledger.ts';
import { observationOf } from '../../chaos/observation.ts';
import { GpuCloudClient } from '../../src/api/client.ts';
import { OWNER_ENV } from '../../src/managed/core/annotations.ts';
import { type RunningSimulator, startSimulator } from '../../src/sim/index.ts';
import { objectSchema, type TestObject } from '../support/operator.ts';

// The chaos suite's verdicts come from these checks: they must see what they claim to count.
const KEY = 'audit-key';
let sim: RunningSimulator;
let client: GpuCloudClient;

function resource(name: string, uid: string, fields: Record<string, unknown> = {}): TestObject {
  return objectSchema.parse({ metadata: { name, uid, generation: 1 }, ...fields });
}

function createPod(name: string, owner?: string) {
  return client.pods.create({
    name,
    image: 'ubuntu:24.04',
    gpuType: 'NVIDIA L40S',
    gpuCount: 1,
    environmentVars: owner === undefined ? [] : [{ key: OWNER_ENV, value: owner }],
  });
}

describe('the chaos audit', () => {
  before(async () => {
    sim = await startSimulator({ apiKeys: [KEY], transitionMs: 0 });
    client = new GpuCloudClient({ baseUrl: sim.url, apiKey: KEY });
  });
  after(async () => {
    await client.close();
    await sim.stop();
  });

  test('counts duplicates, leaks, ownerless cloud objects and stuck finalizers', async () => {
    const ledger = new Ledger();
    ledger.created('GpuPod', 'live', { metadata: { uid: 'uid-live' } });
    ledger.deleted(ledger.created('GpuPod', 'gone', { metadata: { uid: 'uid-gone' } }));
    ledger.deleted(ledger.created('GpuVm', 'stuck', { metadata: { uid: 'uid-stuck' } }));
    await createPod('live', 'uid-live');
    await createPod('live', 'uid-live');
    await createPod('gone', 'uid-gone');
    await createPod('stray');
    const history = new CloudHistory(sim, ledger);
    history.sample();
    const resources = new Map([
      ['GpuPod/live', resource('live', 'uid-live')],
      ['GpuVm/stuck', resource('stuck', 'uid-stuck', { deletionTimestamp: '2026-01-01T00:00:00Z' })],
    ]);
    const findings = audit(ledger, observationOf(resources, sim.state.snapshot(), ledger), history);
    assert.equal(findings.duplicates, 1, findings.notes.join('\n'));
    assert.equal(findings.leaks, 2, "the deleted resource's pod and the pod of nobody");
    assert.equal(findings.stuckFinalizers, 1);
  });

  test('a placed pod replaced after a failed start is no duplicate; two live at once are', async () => {
    const ledger = new Ledger();
    const placement = { gpuTypes: ['NVIDIA L40S'] };
    ledger.created('GpuPod', 'placed', { metadata: { uid: 'uid-placed' }, spec: { placement } });
    const history = new CloudHistory(sim, ledger);
    const first = await createPod('placed', 'uid-placed');
    history.sample();
    await client.pods.delete(first.id);
    history.sample();
    await createPod('placed', 'uid-placed');
    history.sample();
    const look = () => audit(ledger, observationOf(new Map(), sim.state.snapshot(), ledger), history);
    assert.equal(look().duplicates, 0, look().notes.join('\n'));
    await createPod('placed', 'uid-placed');
    history.sample();
    assert.equal(look().duplicates, 1);
    assert.match(look().notes.join('\n'), /GpuPod\/placed had 2 cloud objects live at once/);
  });

  test('a cloud object seen before its resource was known is counted once the resource is', async () => {
    const ledger = new Ledger();
    const history = new CloudHistory(sim, ledger);
    const placement = { gpuTypes: ['NVIDIA L40S'] };
    await createPod('late', 'uid-late');
    await createPod('late', 'uid-late');
    history.sample();
    // Found after its cloud objects, as the virtual-node scenario finds the GpuPods the node makes.
    ledger.created('GpuPod', 'late', { metadata: { uid: 'uid-late' }, spec: { placement } });
    history.sample();
    const findings = audit(ledger, observationOf(new Map(), sim.state.snapshot(), ledger), history);
    assert.equal(history.madePerResource().get('uid-late'), 2);
    assert.equal(findings.duplicates, 1, 'two cloud objects of it live at once');
  });

  test('calls a resource converged only with one live cloud object in the state its spec asks for', async () => {
    const ledger = new Ledger();
    const tracked = ledger.created('GpuPod', 'web', { metadata: { uid: 'uid-web' } });
    const pod = await createPod('web', 'uid-web');
    const state = sim.state.snapshot();
    const look = (spec: Record<string, unknown>, status: Record<string, unknown>) =>
      convergenceProblem(
        tracked,
        observationOf(new Map([['GpuPod/web', resource('web', 'uid-web', { spec, status })]]), state, ledger),
      );
    const synced = { type: 'Synced', status: 'True', reason: 'ReconcileSuccess', message: '' };
    const status = { id: pod.id, phase: 'RUNNING', observedGeneration: 1, conditions: [synced] };
    assert.equal(look({ paused: false }, status), undefined);
    assert.match(look({ paused: true }, status) ?? '', /spec wants PAUSED/);
    assert.match(look({ paused: false }, { ...status, phase: 'INITIALIZING' }) ?? '', /status\.phase/);
    assert.match(look({ paused: false }, { ...status, observedGeneration: 0 }) ?? '', /observedGeneration/);
    await createPod('web', 'uid-web');
    const twice = observationOf(
      new Map([['GpuPod/web', resource('web', 'uid-web', { spec: {}, status })]]),
      sim.state.snapshot(),
      ledger,
    );
    assert.match(convergenceProblem(tracked, twice) ?? '', /2 live cloud objects/);
  });
});
