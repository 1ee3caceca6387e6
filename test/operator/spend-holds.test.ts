import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { z } from 'zod';
import { objectPath, type ResourceType } from '../../src/kube/resource-type.ts';
import { RESUME } from '../../src/managed/core/annotations.ts';
import type { RunningSimulator } from '../../src/sim/index.ts';
import { healthScriptPath } from '../../tools/argocd-health/artifacts.ts';
import { ensureHealthRunner } from '../../tools/argocd-health/ensure.ts';
import {
  condition,
  isReady,
  manifests,
  objectSchema,
  type RunningOperator,
  resources,
  startOperator,
  type TestObject,
  useStack,
} from '../support/operator.ts';
import { reconciled, reconciles } from '../support/reconciled.ts';
import { poll, until } from '../support/until.ts';

// The operator's own holds on spend, on the local apiserver and the simulator: an idle pod paused (and
// held paused until its user says otherwise), deadlines that pause or delete. The operator reads the
// simulator's clock, so moving that clock moves the cloud's time and the operator's together.
const NS = 'spend-holds';
const stack = useStack();
const MINUTE = 60_000;
const IDLE_STOP = { gpuUtilizationBelowPercent: 5, forMinutes: 5 };
/** Who applies manifests here, as Argo CD would: server-side apply under a manager of its own. */
const APPLIER = 'argocd-test';

const pausedBySchema = z.looseObject({
  reason: z.string(),
  message: z.string(),
  since: z.string(),
  generation: z.number(),
  resumeToken: z.string().optional(),
});
const pausedBy = (obj: TestObject | undefined) => {
  const parsed = pausedBySchema.safeParse(obj?.status?.pausedBy);
  return parsed.success ? parsed.data : undefined;
};
const statusField = (obj: TestObject | undefined, field: string): unknown =>
  (obj?.status as Record<string, unknown> | undefined)?.[field];
const cloudPod = (id: string) =>
  stack
    .sim()
    .state.snapshot()
    .pods.find((pod) => pod.id === id);
const cloudVm = (id: string) =>
  stack
    .sim()
    .state.snapshot()
    .vms.find((vm) => vm.id === id);

/** Calls of one operation the simulator received since `mark` (an index in its call log), on `id` if given. */
function callsSince(sim: RunningSimulator, mark: number, operation: string, id?: string): number {
  return sim.calls
    .log()
    .slice(mark)
    .filter(
      (call) =>
        call.operation === operation &&
        (id === undefined || call.params.id === id || call.params.pod_id === id),
    ).length;
}

/**
 * Idle checks of pod `id` since `mark`: its GPU utilisation reads beyond those of its details, which read
 * CPU usage with every GPU read (a details fetch in flight may count one too many for a moment).
 */
function idleChecksSince(sim: RunningSimulator, mark: number, id: string): number {
  return callsSince(sim, mark, 'metrics.gpu', id) - callsSince(sim, mark, 'metrics.cpu', id);
}

/** Applies `manifest` server-side, as Argo CD does, and answers the object as stored. */
function apply(resource: ResourceType, manifest: Record<string, unknown> & { metadata: { name: string } }) {
  return stack.cluster().client.request(objectSchema, {
    method: 'PATCH',
    path: objectPath(resource, { namespace: NS, name: manifest.metadata.name }),
    patchType: 'application/apply-patch+yaml',
    query: { fieldManager: APPLIER, force: true },
    body: { ...manifest, metadata: { ...manifest.metadata, namespace: NS } },
  });
}

/** Writes the object back unchanged with a PUT. */
function put(resource: ResourceType, obj: TestObject) {
  return stack.cluster().client.request(objectSchema, {
    method: 'PUT',
    path: objectPath(resource, { namespace: NS, name: obj.metadata.name }),
    body: obj,
  });
}

/** An annotation change: the operator reconciles the resource again, nothing else changes. */
let nudges = 0;
function nudge(resource: ResourceType, name: string) {
  return stack
    .cluster()
    .patch(resource, NS, name, { metadata: { annotations: { 'spend-holds.test/nudge': String(++nudges) } } });
}

/** States the simulator moves an object out of by itself, one step later. */
const TRANSITIONAL = new Set(['INITIALIZING', 'PAUSING', 'TERMINATING']);

/**
 * Moves the simulator's clock (the operator's too) by `ms`, once no cloud object is between two states.
 * The simulator's scheduler arms its timer against the time mid-advance when a step the advance runs
 * schedules another (a pod entering TERMINATED schedules its removal): that one, and every step queued
 * behind it, then waits the whole advanced span in real time (src/sim/scheduler.ts #advanceTo).
 */
async function advance(ms: number): Promise<void> {
  const sim = stack.sim();
  await until(() => {
    const { pods, vms } = sim.state.snapshot();
    return ![...pods, ...vms].some((object) => TRANSITIONAL.has(object.status));
  }, 'no cloud object between two states');
  sim.clock.advance(ms);
}

/** Moves the simulator's clock (the operator's too) to `at`, epoch ms; never back. */
function advanceTo(at: number): Promise<void> {
  return advance(Math.max(0, at - stack.sim().clock.now()));
}

const scratch = await mkdtemp(join(tmpdir(), 'gpucloud-spend-holds-'));
after(() => rm(scratch, { recursive: true, force: true }));

/** What the Argo CD health script says of the object, run by gopher-lua as Argo CD runs it. */
async function argoHealth(obj: TestObject): Promise<{ status: string; message: string }> {
  const runner = await ensureHealthRunner();
  const file = join(scratch, `${obj.metadata.name}.json`);
  await writeFile(file, JSON.stringify({ apiVersion: 'gpucloud.io/v1alpha1', kind: 'GpuPod', ...obj }));
  const { stdout } = await promisify(execFile)(runner, [healthScriptPath('GpuPod'), file]);
  return z.object({ status: z.string(), message: z.string() }).parse(JSON.parse(stdout));
}

describe('spend holds: idle pods and deadlines', () => {
  let operator: RunningOperator;
  const start = () =>
    startOperator(stack.plane(), stack.sim(), {
      clock: stack.sim().clock,
      flags: ['--idle-check-rps', '20', '--idle-check-interval', '1'],
    });

  before(async () => {
    await stack.cluster().ensureNamespace(NS);
    operator = await start();
  });
  after(async () => {
    await operator?.stop();
  });

  /**
   * Waits for a reconcile of the resource (the only one of its kind by then) that began after this call:
   * it is nudged, and two more reconciles finish, as one may have been under way.
   */
  async function reconciledNow(resource: ResourceType, name: string): Promise<void> {
    const controller = resource.kind.toLowerCase();
    const from = await reconciles(operator, controller);
    await nudge(resource, name);
    await reconciled(operator, from, 2, controller);
  }

  /** Deletes what a test made, so that the clock moved by the next one leaves it be. */
  async function remove(resource: ResourceType, name: string): Promise<void> {
    await stack.cluster().delete(resource, NS, name);
    await stack.cluster().waitFor(resource, NS, name, (obj) => obj === undefined, 'gone');
  }

  test('an idle pod is paused once, held paused by reconciles, a restart and a re-apply, and resumed by its user', async () => {
    const cluster = stack.cluster();
    const sim = stack.sim();
    const manifest = manifests.gpuPod('idler', { paused: false, idleStop: IDLE_STOP });
    await apply(resources.gpuPod, manifest);
    const running = await cluster.waitFor(resources.gpuPod, NS, 'idler', isReady('Running'), 'Ready');
    const id = String(running?.status?.id);
    const generation = running?.metadata.generation;
    const mark = sim.calls.log().length;

    sim.metrics.setGpuUtilization(id, 1);
    await advance(IDLE_STOP.forMinutes * MINUTE + MINUTE);
    const paused = await cluster.waitFor(
      resources.gpuPod,
      NS,
      'idler',
      (obj) => pausedBy(obj)?.reason === 'Idle' && obj?.status?.phase === 'PAUSED',
      'paused by the operator as idle',
    );
    assert.equal(cloudPod(id)?.status, 'PAUSED', 'the cloud pod is paused');
    assert.equal(paused?.spec?.paused, false, 'spec.paused is not rewritten');
    assert.equal(paused?.metadata.generation, generation, 'the spec is untouched');
    const hold = pausedBy(paused);
    assert.equal(hold?.generation, generation);
    assert.equal(hold?.resumeToken, undefined);
    assert.match(String(hold?.message), /below 5% utilisation for 5 minutes/);
    const ready = condition(paused, 'Ready');
    assert.deepEqual([ready?.status, ready?.reason], ['False', 'Idle']);
    const idleEvents = async () => (await cluster.events(NS, 'idler')).filter((e) => e.reason === 'Idle');
    const [event, ...more] = await idleEvents();
    assert.equal(event?.type, 'Warning');
    assert.deepEqual(more, []);

    /** Still held: paused by the operator, the cloud pod paused, asked to pause once and never to resume. */
    const assertHeld = async (after: string) => {
      const obj = await cluster.get(resources.gpuPod, NS, 'idler');
      assert.deepEqual(pausedBy(obj), hold, `${after}: status.pausedBy is kept as it was`);
      assert.equal(obj?.metadata.generation, generation, `${after}: the generation is unchanged`);
      assert.equal(obj?.spec?.paused, false, `${after}: spec.paused is unchanged`);
      assert.equal(cloudPod(id)?.status, 'PAUSED', `${after}: the cloud pod is still paused`);
      assert.equal(callsSince(sim, mark, 'pods.resume', id), 0, `${after}: never asked to resume`);
      assert.equal(callsSince(sim, mark, 'pods.pause', id), 1, `${after}: asked to pause once`);
      assert.equal(await cluster.occurrences(NS, 'idler', 'Idle'), 1, `${after}: one Idle event`);
    };

    // Later reconciles. The clock stays put while it is held: the resume below then comes within the
    // idle check's slack of the pause, so its samples from before the pause show no gap.
    let from = await reconciles(operator);
    await nudge(resources.gpuPod, 'idler');
    await reconciled(operator, from, 1);
    await nudge(resources.gpuPod, 'idler');
    await reconciled(operator, from, 2);
    await assertHeld('after later reconciles');

    // A restart: a new process finds the hold in the status.
    await operator.stop();
    operator = await start();
    await reconciled(operator, 0, 1);
    await nudge(resources.gpuPod, 'idler');
    await reconciled(operator, 0, 2);
    await assertHeld('after an operator restart');

    // A re-apply of the unchanged manifest, then a PUT of the object as read: no new generation.
    const reapplied = await apply(resources.gpuPod, manifest);
    assert.equal(reapplied.metadata.generation, generation, 'a re-apply makes no new generation');
    const rewritten = await put(resources.gpuPod, reapplied);
    assert.equal(rewritten.metadata.generation, generation, 'a PUT of the same spec makes no new generation');
    from = await reconciles(operator);
    await nudge(resources.gpuPod, 'idler');
    await reconciled(operator, from, 1);
    await assertHeld('after a re-apply');

    // Argo CD sees it suspended, not progressing or degraded, and Git in sync.
    const held = await cluster.get(resources.gpuPod, NS, 'idler');
    assert.ok(held);
    const health = await argoHealth(held);
    assert.equal(health.status, 'Suspended', `Argo CD health: ${JSON.stringify(health)}`);
    assert.match(health.message, /Idle/);

    // Its user asks: a new value of the resume annotation.
    const beforeResume = sim.calls.log().length;
    await cluster.patch(resources.gpuPod, NS, 'idler', { metadata: { annotations: { [RESUME]: 'first' } } });
    const resumed = await cluster.waitFor(
      resources.gpuPod,
      NS,
      'idler',
      (obj) => isReady('Running')(obj) && pausedBy(obj) === undefined,
      'resumed by its user',
    );
    assert.equal(resumed?.status?.phase, 'RUNNING');
    assert.equal(cloudPod(id)?.status, 'RUNNING', 'the cloud pod runs again');
    assert.equal(resumed?.metadata.generation, generation);
    const [resumedEvent] = await poll(
      async () => (await cluster.events(NS, 'idler')).filter((e) => e.reason === 'Resumed'),
      (events) => events.length > 0,
      'the Resumed event',
    );
    assert.match(resumedEvent?.message ?? '', new RegExp(`annotation ${RESUME}`));

    // It stays resumed through the idle schedule's next turns (one a second, each a reconcile), though
    // its samples from before the pause read idle: they say nothing of the run its user just started.
    from = await reconciles(operator);
    await reconciled(operator, from, 4);
    const later = await cluster.get(resources.gpuPod, NS, 'idler');
    assert.equal(pausedBy(later), undefined, 'not paused again at once');
    assert.equal(cloudPod(id)?.status, 'RUNNING');
    assert.equal(callsSince(sim, beforeResume, 'pods.pause', id), 0, 'never asked to pause again');
    assert.equal(await cluster.occurrences(NS, 'idler', 'Resumed'), 1, 'one Resumed event, told once');

    // Idle for a whole window of this run: paused again, under the resume value it now carries.
    await advance(IDLE_STOP.forMinutes * MINUTE + MINUTE);
    const again = await cluster.waitFor(
      resources.gpuPod,
      NS,
      'idler',
      (obj) => pausedBy(obj)?.reason === 'Idle' && obj?.status?.phase === 'PAUSED',
      'paused again after a whole idle window',
    );
    assert.equal(pausedBy(again)?.resumeToken, 'first');
    await remove(resources.gpuPod, 'idler');
  });

  test('a busy pod with the same idleStop is never paused', async () => {
    const cluster = stack.cluster();
    const sim = stack.sim();
    await apply(resources.gpuPod, manifests.gpuPod('busy', { idleStop: IDLE_STOP }));
    const running = await cluster.waitFor(resources.gpuPod, NS, 'busy', isReady('Running'), 'Ready');
    const id = String(running?.status?.id);
    sim.metrics.setGpuUtilization(id, 80);
    await advance(IDLE_STOP.forMinutes * MINUTE + MINUTE);
    const mark = sim.calls.log().length;
    // Looked at, over a window its samples cover: idle checks after the move, each a utilisation read.
    await until(() => idleChecksSince(sim, mark, id) >= 3, 'three idle checks of the busy pod');
    const obj = await cluster.get(resources.gpuPod, NS, 'busy');
    assert.equal(pausedBy(obj), undefined);
    assert.ok(isReady('Running')(obj), `still Ready: ${JSON.stringify(condition(obj, 'Ready'))}`);
    assert.equal(cloudPod(id)?.status, 'RUNNING');
    assert.equal(callsSince(sim, mark, 'pods.pause', id), 0, 'never asked to pause');
    assert.deepEqual(
      (await cluster.events(NS, 'busy')).filter((e) => e.reason === 'Idle'),
      [],
      'no Idle event',
    );
    await remove(resources.gpuPod, 'busy');
  });

  test('a deadline with Pause pauses the pod exactly when it passes, across an operator restart', async () => {
    const cluster = stack.cluster();
    const sim = stack.sim();
    await apply(resources.gpuPod, manifests.gpuPod('bounded', { activeDeadlineSeconds: 600 }));
    const running = await cluster.waitFor(
      resources.gpuPod,
      NS,
      'bounded',
      (obj) => isReady('Running')(obj) && statusField(obj, 'deadlineTime') !== undefined,
      'Ready, with its deadline',
    );
    const id = String(running?.status?.id);
    const startTime = Date.parse(String(statusField(running, 'startTime')));
    const deadline = startTime + 600_000;
    assert.equal(startTime, Date.parse(String(statusField(running, 'createdAt'))), 'counted from createdAt');
    assert.equal(Date.parse(String(statusField(running, 'deadlineTime'))), deadline);
    assert.equal(condition(running, 'DeadlineExceeded')?.status, 'False');

    // Just before it (the clock flows on as the test runs: a margin of seconds): a reconcile leaves it be.
    await advanceTo(deadline - 20_000);
    await reconciledNow(resources.gpuPod, 'bounded');
    const before = await cluster.get(resources.gpuPod, NS, 'bounded');
    assert.equal(pausedBy(before), undefined);
    assert.equal(condition(before, 'DeadlineExceeded')?.status, 'False');
    assert.equal(cloudPod(id)?.status, 'RUNNING');

    // A new process, a moment later: the deadline stands where the first put it.
    await operator.stop();
    operator = await start();
    await reconciled(operator, 0, 1);
    await advanceTo(deadline - 10_000);
    await reconciledNow(resources.gpuPod, 'bounded');
    const restarted = await cluster.get(resources.gpuPod, NS, 'bounded');
    assert.ok(sim.clock.now() < deadline, 'all this before the deadline');
    assert.equal(pausedBy(restarted), undefined, 'not paused before its deadline');
    assert.equal(Date.parse(String(statusField(restarted, 'startTime'))), startTime, 'startTime kept');
    assert.equal(cloudPod(id)?.status, 'RUNNING');

    await advanceTo(deadline + 1_000);
    const paused = await cluster.waitFor(
      resources.gpuPod,
      NS,
      'bounded',
      (obj) => pausedBy(obj)?.reason === 'DeadlineExceeded' && obj?.status?.phase === 'PAUSED',
      'paused at its deadline',
    );
    assert.equal(cloudPod(id)?.status, 'PAUSED');
    assert.ok(Date.parse(String(pausedBy(paused)?.since)) >= deadline, 'paused no sooner than the deadline');
    const exceeded = condition(paused, 'DeadlineExceeded');
    assert.deepEqual([exceeded?.status, exceeded?.reason], ['True', 'DeadlineExceeded']);
    const ready = condition(paused, 'Ready');
    assert.deepEqual([ready?.status, ready?.reason], ['False', 'DeadlineExceeded']);
    assert.equal(paused?.spec?.paused, running?.spec?.paused, 'spec.paused is not rewritten');
    assert.ok(
      (await cluster.events(NS, 'bounded')).some(
        (e) => e.reason === 'DeadlineExceeded' && e.type === 'Warning',
      ),
      'a DeadlineExceeded event',
    );
    await remove(resources.gpuPod, 'bounded');
  });

  test('a deadline with Delete deletes the cloud pod, fails the resource, and never creates another', async () => {
    const cluster = stack.cluster();
    const sim = stack.sim();
    const mark = sim.calls.log().length;
    await apply(
      resources.gpuPod,
      manifests.gpuPod('doomed', { activeDeadlineSeconds: 600, deadlineAction: 'Delete' }),
    );
    const running = await cluster.waitFor(
      resources.gpuPod,
      NS,
      'doomed',
      (obj) => isReady('Running')(obj) && statusField(obj, 'deadlineTime') !== undefined,
      'Ready, with its deadline',
    );
    const id = String(running?.status?.id);
    const deadline = Date.parse(String(statusField(running, 'deadlineTime')));

    await advanceTo(deadline - 10_000);
    await reconciledNow(resources.gpuPod, 'doomed');
    assert.ok(sim.clock.now() < deadline);
    assert.equal(cloudPod(id)?.status, 'RUNNING', 'not deleted before its deadline');
    assert.equal(condition(await cluster.get(resources.gpuPod, NS, 'doomed'), 'Failed'), undefined);

    await advanceTo(deadline + 1_000);
    const failed = await cluster.waitFor(
      resources.gpuPod,
      NS,
      'doomed',
      (obj) => condition(obj, 'Failed')?.status === 'True',
      'Failed',
    );
    assert.equal(condition(failed, 'Failed')?.reason, 'DeadlineExceeded');
    assert.equal(condition(failed, 'DeadlineExceeded')?.status, 'True');
    assert.ok(
      ['TERMINATING', 'TERMINATED'].includes(String(cloudPod(id)?.status)),
      'the cloud pod is deleted',
    );
    assert.ok(callsSince(sim, mark, 'pods.delete', id) >= 1);

    // Long after, with the deleted pod gone from the cloud's lists and the resource reconciled again.
    await advance(10 * MINUTE);
    const lists = sim.calls.log().length;
    await reconciledNow(resources.gpuPod, 'doomed');
    await until(() => callsSince(sim, lists, 'pods.list') >= 3, 'three more lists of the cloud pods');
    assert.equal(callsSince(sim, mark, 'pods.create'), 1, 'one pods.create call, ever');
    const after = await cluster.get(resources.gpuPod, NS, 'doomed');
    assert.equal(condition(after, 'Failed')?.status, 'True', 'still finished');
    assert.equal(after?.status?.id, id);
    assert.ok(
      (await cluster.events(NS, 'doomed')).some(
        (e) => e.reason === 'DeadlineExceeded' && e.type === 'Warning',
      ),
      'a DeadlineExceeded event',
    );
    await remove(resources.gpuPod, 'doomed');
  });

  test('a preempted spot pod recreated keeps its startTime: its deadline counts from the first pod', async () => {
    const cluster = stack.cluster();
    const sim = stack.sim();
    await apply(
      resources.gpuPod,
      manifests.gpuPod('spotty', { isSpot: true, recoveryPolicy: 'Recreate', activeDeadlineSeconds: 600 }),
    );
    const first = await cluster.waitFor(
      resources.gpuPod,
      NS,
      'spotty',
      (obj) => isReady('Running')(obj) && statusField(obj, 'startTime') !== undefined,
      'Ready, with its start time',
    );
    const firstId = String(first?.status?.id);
    const startTime = String(statusField(first, 'startTime'));
    const deadline = Date.parse(startTime) + 600_000;

    assert.ok(sim.faults.preempt(firstId), 'the simulator preempts the pod');
    await cluster.waitFor(
      resources.gpuPod,
      NS,
      'spotty',
      (obj) => obj?.status?.preemptions === 1,
      'preempted',
    );
    // Half the deadline later (past the recreate backoff too), a replacement.
    await advance(300_000);
    const replaced = await cluster.waitFor(
      resources.gpuPod,
      NS,
      'spotty',
      (obj) => isReady('Running')(obj) && obj?.status?.id !== firstId,
      'Ready on a replacement',
    );
    const replacementId = String(replaced?.status?.id);
    assert.ok(
      Date.parse(String(statusField(replaced, 'createdAt'))) >= Date.parse(startTime) + 300_000,
      'the replacement is younger',
    );
    assert.equal(statusField(replaced, 'startTime'), startTime, 'startTime is the first pod’s');
    assert.equal(Date.parse(String(statusField(replaced, 'deadlineTime'))), deadline);

    await advanceTo(deadline + 1_000);
    const paused = await cluster.waitFor(
      resources.gpuPod,
      NS,
      'spotty',
      (obj) => pausedBy(obj)?.reason === 'DeadlineExceeded' && obj?.status?.phase === 'PAUSED',
      'paused at the first pod’s deadline',
    );
    assert.equal(paused?.status?.id, replacementId);
    assert.equal(cloudPod(replacementId)?.status, 'PAUSED');
    await remove(resources.gpuPod, 'spotty');
  });

  test('a GpuVm with activeDeadlineSeconds and deadlineAction Delete is deleted when it passes', async () => {
    const cluster = stack.cluster();
    const sim = stack.sim();
    const mark = sim.calls.log().length;
    await apply(
      resources.gpuVm,
      manifests.gpuVm('bounded-vm', { activeDeadlineSeconds: 600, deadlineAction: 'Delete' }),
    );
    const running = await cluster.waitFor(
      resources.gpuVm,
      NS,
      'bounded-vm',
      (obj) => isReady()(obj) && statusField(obj, 'deadlineTime') !== undefined,
      'Ready, with its deadline',
    );
    const id = String(running?.status?.id);
    const deadline = Date.parse(String(statusField(running, 'deadlineTime')));
    assert.equal(deadline, Date.parse(String(statusField(running, 'startTime'))) + 600_000);

    await advanceTo(deadline - 10_000);
    await reconciledNow(resources.gpuVm, 'bounded-vm');
    assert.ok(sim.clock.now() < deadline);
    assert.equal(cloudVm(id)?.status, 'RUNNING', 'not deleted before its deadline');
    assert.equal(callsSince(sim, mark, 'vms.terminate', id), 0);

    await advanceTo(deadline + 1_000);
    const failed = await cluster.waitFor(
      resources.gpuVm,
      NS,
      'bounded-vm',
      (obj) => condition(obj, 'Failed')?.status === 'True',
      'Failed',
    );
    assert.equal(condition(failed, 'Failed')?.reason, 'DeadlineExceeded');
    assert.equal(condition(failed, 'DeadlineExceeded')?.status, 'True');
    await poll(
      async () => cloudVm(id)?.status,
      (status) => status === 'TERMINATED',
      'the cloud VM terminated',
    );
    assert.equal(callsSince(sim, mark, 'vms.create'), 1, 'one VM created');
    await remove(resources.gpuVm, 'bounded-vm');
  });
});
