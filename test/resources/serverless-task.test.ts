// The ServerlessTask adapter (src/resources/serverless-task/adapter.ts) on its own: a task is submitted once
// under an id derived from the resource, never changed and never deleted, so what matters is what it waits
// for (its endpoint), what it submits, how it is found again, and how its states read. Cloud calls go through
// a real client to the simulator; the endpoint it refers to is a peer resource, as the informer cache holds it.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ApiCode } from '../../src/api/codes.ts';
import { CloudApiError } from '../../src/api/errors.ts';
import { TASK_STATUSES, type TaskSummary } from '../../src/api/schemas/serverless.ts';
import { systemClock } from '../../src/lib/clock.ts';
import { ReconcileError } from '../../src/managed/core/errors.ts';
import { type ExternalKind, type ManagedObject, meteringOf } from '../../src/managed/core/external-kind.ts';
import type { Peers } from '../../src/managed/reconciler/kind-controller.ts';
import { MANAGED_SPEC_FIELDS } from '../../src/resources/common/schema.ts';
import { serverlessTaskAdapter } from '../../src/resources/serverless-task/adapter.ts';
import {
  OUTPUT_CAP_BYTES,
  type ServerlessTaskSpec,
  ServerlessTaskSpecSchema,
} from '../../src/resources/serverless-task/schema.ts';
import { startReceiver } from '../sim/helpers.ts';
import { eventually } from '../support/eventually.ts';
import {
  actContext,
  type Cloud,
  camel,
  NAMESPACE,
  resource,
  spy,
  startCloud,
  watchedFields,
} from './adapter-support.ts';

type TaskView = TaskSummary & { output?: unknown };

const L40S = 'NVIDIA L40S';

/** The endpoints of NAMESPACE as the informer cache holds them, by name. */
class EndpointPeers implements Peers {
  readonly byName = new Map<string, ManagedObject<unknown>>();

  get(
    resource: { kind: string },
    key: { namespace?: string; name: string },
  ): ManagedObject<unknown> | undefined {
    if (resource.kind !== 'ServerlessEndpoint' || key.namespace !== NAMESPACE) return undefined;
    return this.byName.get(key.name);
  }

  /** An endpoint resource named `name`; `status` as the operator last wrote it. */
  put(
    name: string,
    spec: Record<string, unknown>,
    status?: Record<string, unknown>,
    metadata: Record<string, unknown> = {},
  ): ManagedObject<unknown> {
    const endpoint = resource('ServerlessEndpoint', spec, { name, ...metadata }, status as never);
    this.byName.set(name, endpoint);
    return endpoint;
  }
}

const taskSpec = (raw: Record<string, unknown> = {}): ServerlessTaskSpec =>
  ServerlessTaskSpecSchema.parse({ endpointRef: { name: 'queue' }, input: { prompt: 'hello' }, ...raw });

const task = (spec: ServerlessTaskSpec) => resource('ServerlessTask', spec);

/** The cloud task id of a resource: its uid without hyphens (the id pattern allows none). */
const cloudTaskId = (mr: { metadata: { uid: string } }) => mr.metadata.uid.replace(/-/g, '');

describe('ServerlessTask adapter', () => {
  let cloud: Cloud;
  const peers = new EndpointPeers();
  let adapter: ExternalKind<ServerlessTaskSpec, TaskView>;
  /** The cloud id and name of a running QUEUE endpoint, which the peer `queue` stands for. */
  let endpointId: string;
  const endpointName = 'queue-ep';
  /** A finished task, as a get shows it (with its output). */
  let finished: TaskView;

  /** A running QUEUE endpoint with one idle worker, as peer `peer`; answers its cloud id. */
  const idleEndpoint = async (peer: string): Promise<string> => {
    const made = await cloud.client.serverless.create({
      name: peer,
      image: 'ghcr.io/acme/worker:1',
      resources: [{ region: 'us-east-1', gpuType: L40S, gpuCount: 1 }],
      serviceMode: 'QUEUE',
      workers: 1,
    });
    cloud.step();
    peers.put(peer, { serviceMode: 'QUEUE' }, { id: made.id, name: peer, phase: 'RUNNING' });
    return made.id;
  };

  /** An adapter of its own: which endpoints have tasks in flight is per adapter. */
  const newAdapter = () =>
    serverlessTaskAdapter(cloud.client, { queueIntervalMs: 60_000, clock: systemClock, peers });

  before(async () => {
    cloud = await startCloud();
    adapter = newAdapter();
    const made = await cloud.client.serverless.create({
      name: endpointName,
      image: 'ghcr.io/acme/worker:1',
      resources: [{ region: 'us-east-1', gpuType: L40S, gpuCount: 1 }],
      serviceMode: 'QUEUE',
      workers: 1,
    });
    endpointId = made.id;
    cloud.step();
    peers.put('queue', { serviceMode: 'QUEUE' }, { id: endpointId, name: endpointName, phase: 'RUNNING' });
    const mr = task(taskSpec({ input: { prompt: 'finish me' } }));
    await adapter.create(mr, actContext(mr));
    cloud.step(2);
    finished = (await adapter.get(adapter.identity?.ownId?.(mr) ?? '')) as TaskView;
    assert.equal(finished.status, 'SUCCESS');
  });
  after(() => cloud?.stop());

  it('plan: always in sync, whatever the task’s status: a submitted task is never changed', async () => {
    const mr = task(taskSpec());
    for (const status of [...TASK_STATUSES, 'SOMETHING_NEW']) {
      assert.deepEqual(await adapter.plan(mr, { ...finished, status }, actContext(mr)), { kind: 'in-sync' });
    }
  });

  it('has no drift, late initialisation or delete: every field is immutable and the cloud never deletes a task', () => {
    assert.deepEqual(adapter.observe(task(taskSpec({ input: { other: true } })), finished).drift, []);
    assert.equal(adapter.lateInit, undefined);
    assert.equal(adapter.delete, undefined);
  });

  describe('readiness', () => {
    it('waiting and running tasks are not Ready; a successful one is Ready, reason Succeeded', () => {
      const mr = task(taskSpec());
      for (const status of ['PROCESSING', 'DELIVERED']) {
        const readiness = adapter.observe(mr, { ...finished, status }).readiness;
        assert.deepEqual(
          [readiness.ready, readiness.reason, readiness.broken],
          [false, camel(status), undefined],
        );
        assert.equal(adapter.phaseOf({ ...finished, status }), status);
      }
      const success = adapter.observe(mr, finished).readiness;
      assert.deepEqual([success.ready, success.reason], [true, 'Succeeded']);
      assert.notEqual(success.broken, true);
    });

    it('a failed task is broken, reason TaskFailed, with the cloud’s reason in the message (or a note that it gave none)', () => {
      const mr = task(taskSpec());
      const failed = adapter.observe(mr, {
        ...finished,
        status: 'FAILED',
        error: 'worker ran out of memory',
      }).readiness;
      assert.deepEqual([failed.ready, failed.reason, failed.broken], [false, 'TaskFailed', true]);
      assert.match(failed.message, /worker ran out of memory/);
      const silent = adapter.observe(mr, { ...finished, status: 'FAILED', error: null }).readiness;
      assert.equal(silent.reason, 'TaskFailed', 'the reason stays stable whatever the error says');
      assert.match(silent.message, /gives no reason/);
    });

    it('a status the operator does not know is not Ready and says which', () => {
      const readiness = adapter.observe(task(taskSpec()), { ...finished, status: 'RETRYING' }).readiness;
      assert.deepEqual([readiness.ready, readiness.reason], [false, 'UnknownPhase']);
      assert.match(readiness.message, /RETRYING/);
    });

    it('the outcome: SUCCESS completes the task, FAILED fails it, any other status is not final', () => {
      for (const status of [...TASK_STATUSES, 'RETRYING']) {
        const expected = status === 'SUCCESS' ? 'Complete' : status === 'FAILED' ? 'Failed' : undefined;
        assert.equal(adapter.finite?.outcomeOf(status), expected, status);
      }
    });
  });

  describe('statusOf', () => {
    it('shows the task’s ids, delivery, output and times as the cloud reports them', () => {
      const status = adapter.observe(task(taskSpec()), finished).status;
      const output = finished.output;
      assert.deepEqual(output, { echo: { prompt: 'finish me' } }, 'the simulator echoes the input');
      assert.deepEqual(status, {
        taskId: finished.taskId,
        endpointId,
        endpointName,
        deliveryStatus: finished.deliveryStatus,
        deliveryAttempts: finished.deliveryAttempts,
        error: undefined,
        output,
        outputBytes: Buffer.byteLength(JSON.stringify(output)),
        createdAt: new Date(finished.createdAt).toISOString(),
        updatedAt: new Date(finished.updatedAt).toISOString(),
        deliveredAt: undefined,
      });
    });

    it('an output larger than the cap stays out of status, which says so and how large it is', () => {
      const mr = task(taskSpec());
      // A JSON string's bytes are its characters and two quotes.
      const fits = 'x'.repeat(OUTPUT_CAP_BYTES - 2);
      const atCap = adapter.observe(mr, { ...finished, output: fits }).status;
      assert.deepEqual(
        [atCap.output, atCap.outputBytes, atCap.outputTruncated],
        [fits, OUTPUT_CAP_BYTES, undefined],
      );
      const over = adapter.observe(mr, { ...finished, output: `${fits}é` }).status;
      assert.equal('output' in over, false);
      assert.deepEqual([over.outputTruncated, over.outputBytes], [true, OUTPUT_CAP_BYTES + 2]);
    });

    it('a task without output, error or delivery shows none of them, never null', () => {
      const status = adapter.observe(task(taskSpec()), {
        ...finished,
        output: null,
        error: null,
        deliveredAt: null,
      }).status;
      for (const field of ['output', 'outputBytes', 'outputTruncated'])
        assert.equal(field in status, false, field);
      assert.equal(status.error, undefined);
      assert.equal(status.deliveredAt, undefined);
      const delivered = adapter.observe(task(taskSpec()), {
        ...finished,
        deliveredAt: finished.updatedAt,
        error: 'boom',
      }).status;
      assert.equal(delivered.deliveredAt, new Date(finished.updatedAt).toISOString());
      assert.equal(delivered.error, 'boom');
    });
  });

  it('fingerprint watches exactly the status and the webhook delivery, which changes after the task has finished', () => {
    // The status decides readiness and the outcome; a finished task's result is still being delivered to its
    // webhook, with retries, which only deliveryStatus and deliveryAttempts show. Output, error and times
    // change with one of these; the ids never do.
    assert.deepEqual(watchedFields(finished, adapter.fingerprint), [
      'deliveryAttempts',
      'deliveryStatus',
      'status',
    ]);
  });

  it('isGone: never, the cloud keeps a finished task', () => {
    for (const status of TASK_STATUSES) assert.equal(adapter.isGone({ ...finished, status }), false);
  });

  describe('identity', () => {
    it('the task id is the resource’s uid without hyphens, under its endpoint’s cloud id', () => {
      const mr = task(taskSpec());
      assert.equal(adapter.identity?.ownId?.(mr), `${endpointId}/${cloudTaskId(mr)}`);
      assert.equal(
        adapter.idOf({ ...finished, taskId: cloudTaskId(mr) }),
        `${endpointId}/${cloudTaskId(mr)}`,
      );
      assert.match(cloudTaskId(mr), /^[A-Za-z0-9_]+$/);
    });

    it('isOwnCreate: a task whose id is the resource’s; tasks carry no owner marker', async () => {
      const mr = task(taskSpec());
      assert.equal(
        await adapter.identity?.isOwnCreate(mr, { ...finished, taskId: cloudTaskId(mr) }, actContext(mr)),
        true,
      );
      assert.equal(await adapter.identity?.isOwnCreate(mr, finished, actContext(mr)), false);
      assert.equal(adapter.identity?.markerOf, undefined);
    });

    it('without its endpoint’s cloud id the task cannot be looked up: a non-terminal EndpointNotFound', () => {
      peers.put('no-id-yet', { serviceMode: 'QUEUE' }, { phase: 'INITIALIZING' });
      for (const name of ['no-id-yet', 'missing']) {
        assert.throws(
          () => adapter.identity?.ownId?.(task(taskSpec({ endpointRef: { name } }))),
          (error: unknown) =>
            error instanceof ReconcileError && error.reason === 'EndpointNotFound' && !error.terminal,
        );
      }
    });
  });

  describe('blocker', () => {
    const blockerOf = (name: string, raw: Record<string, unknown> = {}) =>
      adapter.identity?.blocker?.(task(taskSpec({ endpointRef: { name }, ...raw })));
    const running = { id: '4242', name: 'ep', phase: 'RUNNING' };

    it('none once the endpoint is a running QUEUE endpoint of the same account', () => {
      peers.put('ready', { serviceMode: 'QUEUE' }, running);
      assert.equal(blockerOf('ready'), undefined);
      peers.put('ready-acme', { serviceMode: 'QUEUE', providerConfigRef: { name: 'acme' } }, running);
      assert.equal(blockerOf('ready-acme', { providerConfigRef: { name: 'acme' } }), undefined);
    });

    it('waits for an endpoint that does not exist, has no cloud id or service mode yet, or is being deleted', () => {
      assert.equal(blockerOf('nowhere')?.reason, 'EndpointNotFound');
      assert.match(blockerOf('nowhere')?.message ?? '', new RegExp(`nowhere.*${NAMESPACE}`));
      peers.put('unsubmitted', { serviceMode: 'QUEUE' }, { phase: 'INITIALIZING' });
      assert.equal(blockerOf('unsubmitted')?.reason, 'EndpointNotReady');
      peers.put('mode-unknown', {}, running);
      assert.equal(blockerOf('mode-unknown')?.reason, 'EndpointNotReady');
      peers.put('leaving', { serviceMode: 'QUEUE' }, running, { deletionTimestamp: '2025-01-01T00:00:00Z' });
      assert.equal(blockerOf('leaving')?.reason, 'EndpointNotReady');
    });

    it('waits for an endpoint that is not running, naming its phase', () => {
      peers.put('stopped', { serviceMode: 'QUEUE' }, { ...running, phase: 'STOPPED' });
      const blocker = blockerOf('stopped');
      assert.equal(blocker?.reason, 'EndpointNotRunning');
      assert.match(blocker?.message ?? '', /STOPPED/);
    });

    it('refuses, terminally, an endpoint of another account or of another service mode: waiting cannot help', () => {
      peers.put('elsewhere', { serviceMode: 'QUEUE', providerConfigRef: { name: 'other' } }, running);
      peers.put('balanced', { serviceMode: 'ALB' }, running);
      for (const [name, reason] of [
        ['elsewhere', 'EndpointInOtherAccount'],
        ['balanced', 'EndpointNotQueue'],
      ] as const) {
        assert.throws(
          () => blockerOf(name),
          (error: unknown) => error instanceof ReconcileError && error.reason === reason && error.terminal,
          name,
        );
      }
    });
  });

  it('holds no GPUs and asks none of its account: the endpoint’s workers do', async () => {
    assert.equal(meteringOf(adapter).heldGpus(finished), 0);
    assert.deepEqual(await meteringOf(adapter).demand(task(taskSpec())), { live: false });
  });

  describe('create', () => {
    it('submits the spec’s task fields under the resource’s id, the webhook key resolved from its Secret', async (t) => {
      const submits = spy(t, cloud.client.serverless.tasks, 'submit');
      const receiver = await startReceiver(t);
      const spec = taskSpec({
        input: { prompt: 'all fields' },
        workerPort: 8080,
        processUri: '/run',
        webhook: `${receiver.url}/results`,
        webhookAuthKeySecretRef: { name: 'hook', key: 'api-key' },
        ttlSecondsAfterFinished: 60,
        providerConfigRef: { name: 'default' },
      });
      const mr = task(spec);
      const answer = await adapter.create(mr, actContext(mr, { hook: { 'api-key': 'hook-secret' } }));
      assert.deepEqual(submits, [
        [
          endpointId,
          {
            taskId: cloudTaskId(mr),
            input: { prompt: 'all fields' },
            workerPort: 8080,
            processUri: '/run',
            webhook: `${receiver.url}/results`,
            webhookAuthKey: 'hook-secret',
          },
        ],
      ]);
      const [, request] = submits[0] as [string, Record<string, unknown>];
      for (const field of [
        'endpointRef',
        'webhookAuthKeySecretRef',
        'ttlSecondsAfterFinished',
        ...MANAGED_SPEC_FIELDS,
      ]) {
        assert.equal(field in request, false, `${field} reaches the cloud`);
      }
      // The submit answers only the id: the adapter answers the task as it must stand now.
      assert.deepEqual(
        [
          answer.taskId,
          answer.endpointId,
          answer.endpointName,
          answer.status,
          answer.deliveryStatus,
          answer.webhook,
        ],
        [cloudTaskId(mr), endpointId, endpointName, 'PROCESSING', 'INIT', `${receiver.url}/results`],
      );
      const stored = await adapter.get(adapter.identity?.ownId?.(mr) ?? '');
      assert.deepEqual([stored?.taskId, stored?.status], [cloudTaskId(mr), 'PROCESSING']);
      cloud.step(2);
      await eventually(() => assert.equal(receiver.received.length, 1));
      assert.equal(receiver.received[0]?.headers['x-api-key'], 'hook-secret');
    });

    it('sends only the input when the spec sets nothing else', async (t) => {
      const submits = spy(t, cloud.client.serverless.tasks, 'submit');
      const mr = task(taskSpec());
      await adapter.create(mr, actContext(mr));
      assert.deepEqual(submits, [[endpointId, { taskId: cloudTaskId(mr), input: { prompt: 'hello' } }]]);
    });

    it('a second submit of the same task (a create interrupted before its id was recorded) finds the first', async () => {
      const idle = await idleEndpoint('resubmit');
      const mr = task(taskSpec({ endpointRef: { name: 'resubmit' } }));
      const first = await adapter.create(mr, actContext(mr));
      cloud.step();
      const submits = cloud.callsOf('serverless.tasks.submit');
      const again = await newAdapter().create(mr, actContext(mr));
      assert.equal(
        cloud.callsOf('serverless.tasks.submit'),
        submits + 1,
        'the cloud refused the second submit',
      );
      assert.equal(again.taskId, first.taskId);
      assert.equal(again.status, 'DELIVERED', 'the task as the cloud has it now');
      const all = await Array.fromAsync(cloud.client.serverless.tasks.listAll(idle));
      assert.equal(all.filter((listed) => listed.taskId === first.taskId).length, 1);
    });

    it('a submit refused for another reason fails with the cloud’s error', async () => {
      const made = await cloud.client.serverless.create({
        name: 'balancer',
        image: 'x:1',
        resources: [{ region: 'us-east-1', gpuType: L40S, gpuCount: 1 }],
        serviceMode: 'ALB',
      });
      peers.put('balancer', { serviceMode: 'ALB' }, { id: made.id, name: 'balancer', phase: 'RUNNING' });
      const mr = task(taskSpec({ endpointRef: { name: 'balancer' } }));
      await assert.rejects(
        adapter.create(mr, actContext(mr)),
        (error: unknown) => error instanceof CloudApiError && error.code === ApiCode.InvalidRequest,
      );
    });

    it('a task whose endpoint has no cloud id, or whose webhook Secret is missing, submits nothing', async () => {
      const submits = cloud.callsOf('serverless.tasks.submit');
      const orphan = task(taskSpec({ endpointRef: { name: 'missing' } }));
      await assert.rejects(adapter.create(orphan, actContext(orphan)), { reason: 'EndpointNotFound' });
      const keyless = task(taskSpec({ webhookAuthKeySecretRef: { name: 'hook', key: 'api-key' } }));
      await assert.rejects(adapter.create(keyless, actContext(keyless)), { reason: 'SecretNotFound' });
      assert.equal(cloud.callsOf('serverless.tasks.submit'), submits);
    });
  });

  describe('list and get', () => {
    it('lists the tasks in flight of the endpoints it has submitted to, and forgets an endpoint once none are', async () => {
      const own = newAdapter();
      await idleEndpoint('listed');
      const lists = () => cloud.callsOf('serverless.tasks.list');
      let before = lists();
      assert.deepEqual(await own.list(), []);
      assert.equal(lists(), before, 'no endpoint has tasks in flight yet: no call');
      const mr = task(taskSpec({ endpointRef: { name: 'listed' } }));
      await own.create(mr, actContext(mr));
      before = lists();
      const listed = await own.list();
      assert.deepEqual(
        listed.map((item) => own.idOf(item)),
        [own.identity?.ownId?.(mr)],
      );
      assert.equal(lists(), before + 2, 'one list per in-flight status');
      cloud.step(2);
      await sleep(2); // the endpoint is forgotten by a list that started after it was last seen busy
      assert.deepEqual(await own.list(), []);
      before = lists();
      assert.deepEqual(await own.list(), []);
      assert.equal(lists(), before, 'the endpoint is forgotten');
    });

    it('get: undefined for an id that names no task, without a call for one that is not a task id at all', async () => {
      const gets = cloud.callsOf('serverless.tasks.get');
      for (const id of ['', 'no-slash', '/task', `${endpointId}/`])
        assert.equal(await adapter.get(id), undefined, id);
      assert.equal(cloud.callsOf('serverless.tasks.get'), gets);
      assert.equal(await adapter.get(`${endpointId}/nosuchtask`), undefined);
    });

    it('get of a task in flight makes its endpoint listed again', async () => {
      const own = newAdapter();
      const mr = task(taskSpec());
      await adapter.create(mr, actContext(mr));
      assert.deepEqual(await own.list(), []);
      assert.equal((await own.get(own.identity?.ownId?.(mr) ?? ''))?.status, 'PROCESSING');
      assert.ok((await own.list()).some((item) => item.taskId === cloudTaskId(mr)));
    });
  });
});
