import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { z } from 'zod';
import { KubeClient } from '../../src/kube/client.ts';
import { EventRecorder, type EventRecorderOptions } from '../../src/kube/event-recorder.ts';
import { type KubeObject, kubeObjectSchema } from '../../src/kube/object.ts';
import { collectionPath, coreEvents, objectPath } from '../../src/kube/resource-type.ts';
import { useControlPlane } from '../support/control-plane.ts';
import { createConfigMap, createNamespace } from '../support/kube.ts';
import { captureLogs } from '../support/log-capture.ts';

const plane = useControlPlane();
const logs = captureLogs('info');

const eventSchema = kubeObjectSchema.extend({
  involvedObject: z.looseObject({
    apiVersion: z.string(),
    kind: z.string(),
    name: z.string(),
    namespace: z.string().optional(),
    uid: z.string().optional(),
  }),
  type: z.string(),
  reason: z.string(),
  message: z.string(),
  count: z.number(),
  firstTimestamp: z.string(),
  lastTimestamp: z.string(),
  source: z.looseObject({ component: z.string() }),
});
const eventListSchema = z.object({ items: z.array(eventSchema) });

describe('EventRecorder against a real apiserver', () => {
  let client: KubeClient;
  let namespace: string;
  before(async () => {
    client = new KubeClient(plane().connection);
    namespace = await createNamespace(client, 'events');
  });

  const recorder = (options: Partial<EventRecorderOptions> = {}) =>
    new EventRecorder({ client, component: 'gpucloud-operator', logger: logs.logger, ...options });

  /** What `kubectl describe` finds: the events whose involvedObject is this object. */
  async function eventsFor(obj: KubeObject) {
    const { items } = await client.request(eventListSchema, {
      method: 'GET',
      path: collectionPath(coreEvents, obj.metadata.namespace ?? 'default'),
      query: { fieldSelector: `involvedObject.uid=${obj.metadata.uid}` },
    });
    return items;
  }

  test('forgets a gone object: its rate limit and series go, another object’s stay and still fold', async () => {
    const gone = await createConfigMap(client, namespace, 'forgotten');
    const kept = await createConfigMap(client, namespace, 'remembered');
    const events = recorder();
    events.event(gone, 'Warning', 'Failed', 'it failed');
    events.event(kept, 'Warning', 'Failed', 'it failed');
    await events.flush();
    assert.equal(events.size, 2);
    events.forget(gone.metadata.uid ?? '');
    assert.equal(events.size, 1, 'only the live object is kept');
    events.event(kept, 'Warning', 'Failed', 'it failed');
    await events.flush();
    const [folded, ...more] = await eventsFor(kept);
    assert.equal(more.length, 0);
    assert.equal(folded?.count, 2, 'the kept object’s repeat still folds into its series');
  });

  test('records an event that kubectl describe finds for the object', async () => {
    const target = await createConfigMap(client, namespace, 'described');
    const events = recorder();
    events.event(target, 'Normal', 'Created', 'created cloud pod p-123');
    await events.flush();
    const [event, ...rest] = await eventsFor(target);
    assert.equal(rest.length, 0);
    assert.ok(event);
    assert.deepEqual(
      {
        type: event.type,
        reason: event.reason,
        message: event.message,
        count: event.count,
        component: event.source.component,
        involved: [event.involvedObject.apiVersion, event.involvedObject.kind, event.involvedObject.name],
      },
      {
        type: 'Normal',
        reason: 'Created',
        message: 'created cloud pod p-123',
        count: 1,
        component: 'gpucloud-operator',
        involved: ['v1', 'ConfigMap', 'described'],
      },
    );
  });

  test('aggregates repeats into one event with a count, and keeps different messages apart', async () => {
    const obj = await createConfigMap(client, namespace, 'repeated');
    const events = recorder();
    for (let i = 0; i < 5; i++)
      events.event(obj, 'Warning', 'CloudUnavailable', 'the GPU cloud answered 503');
    await events.flush();
    events.event(obj, 'Warning', 'CloudUnavailable', 'the GPU cloud answered 503');
    events.event(obj, 'Warning', 'CloudUnavailable', 'the GPU cloud timed out');
    await events.flush();
    const found = await eventsFor(obj);
    assert.deepEqual(found.map((e) => [e.message, e.count]).sort(), [
      ['the GPU cloud answered 503', 6],
      ['the GPU cloud timed out', 1],
    ]);
    const repeated = found.find((e) => e.count === 6);
    assert.ok(repeated && repeated.lastTimestamp >= repeated.firstTimestamp);

    const { stdout } = await promisify(execFile)('kubectl', [
      '--kubeconfig',
      plane().kubeconfigPath,
      'describe',
      'configmap',
      'repeated',
      '--namespace',
      namespace,
    ]);
    assert.match(
      stdout,
      /Warning\s+CloudUnavailable\s+.*\(x6 over .*\)\s+gpucloud-operator\s+the GPU cloud answered 503/,
    );
  });

  test('rate limits per object, so one failing resource cannot flood the apiserver', async () => {
    const noisy = await createConfigMap(client, namespace, 'noisy');
    const quiet = await createConfigMap(client, namespace, 'quiet');
    const events = recorder({ burstPerObject: 3, refillIntervalMs: 3_600_000 });
    for (let i = 0; i < 20; i++) events.event(noisy, 'Warning', `Failure${i}`, `attempt ${i} failed`);
    events.event(quiet, 'Normal', 'Synced', 'in sync');
    await events.flush();
    assert.deepEqual((await eventsFor(noisy)).map((e) => e.reason).sort(), [
      'Failure0',
      'Failure1',
      'Failure2',
    ]);
    assert.equal((await eventsFor(quiet)).length, 1);
  });

  test("repeats fold before the rate limit: one failure said again and again never crowds out the object's new Warnings", async () => {
    const target = await createConfigMap(client, namespace, 'repeating');
    const events = recorder({ burstPerObject: 3, refillIntervalMs: 3_600_000 });
    for (let i = 0; i < 50; i++)
      events.event(target, 'Warning', 'CloudUnavailable', 'the GPU cloud answered 503');
    await events.flush();
    events.event(target, 'Warning', 'Drifted', 'the cloud pod differs in image');
    events.event(target, 'Warning', 'Preempted', 'the cloud took the spot capacity back');
    await events.flush();
    const written = await eventsFor(target);
    assert.deepEqual(written.map((e) => `${e.reason} x${e.count}`).sort(), [
      'CloudUnavailable x50',
      'Drifted x1',
      'Preempted x1',
    ]);
  });

  test('drops, and counts, what a full queue cannot hold; repeats of a queued event still coalesce', async () => {
    const targets = await Promise.all(
      ['burst-a', 'burst-b', 'burst-c', 'burst-d'].map((name) => createConfigMap(client, namespace, name)),
    );
    const dropped: string[] = [];
    const events = recorder({ maxQueued: 2, writers: 1, onDropped: (cause) => dropped.push(cause) });
    // The first is taken by the writer at once; two wait in the queue; the fourth finds it full.
    for (const target of targets) events.event(target, 'Normal', 'Created', 'created cloud pod');
    events.event(targets[2] as KubeObject, 'Normal', 'Created', 'created cloud pod');
    await events.flush();
    const written = await Promise.all(targets.map(eventsFor));
    assert.deepEqual(
      written.map((items) => items.map((e) => e.count)),
      [[1], [1], [2], []],
    );
    assert.deepEqual(dropped, ['queue_full']);
  });

  test('Normal events share one budget across objects; Warnings are never held back by it', async () => {
    const targets = await Promise.all(
      ['many-a', 'many-b', 'many-c', 'many-d'].map((name) => createConfigMap(client, namespace, name)),
    );
    const dropped: string[] = [];
    // A budget of 0.4 per second bursts to 2: two of four creates are told, the others dropped.
    const events = recorder({ normalPerSecond: 0.4, onDropped: (cause) => dropped.push(cause) });
    for (const target of targets) events.event(target, 'Normal', 'Created', 'created cloud pod');
    events.event(targets[3] as KubeObject, 'Warning', 'Failed', 'the cloud reports the pod FAILED');
    await events.flush();
    const written = await Promise.all(targets.map(eventsFor));
    assert.deepEqual(
      written.map((items) => items.map((e) => e.reason)),
      [['Created'], ['Created'], [], ['Failed']],
    );
    assert.deepEqual(dropped, ['rate_limited', 'rate_limited']);
  });

  test('starts a new event when the aggregated one has expired', async () => {
    const obj = await createConfigMap(client, namespace, 'expired');
    const events = recorder();
    events.event(obj, 'Normal', 'Resumed', 'pod resumed');
    await events.flush();
    const [first] = await eventsFor(obj);
    assert.ok(first);
    await client.request(z.unknown(), {
      method: 'DELETE',
      path: objectPath(coreEvents, { namespace, name: first.metadata.name }),
    });
    events.event(obj, 'Normal', 'Resumed', 'pod resumed');
    await events.flush();
    const [second, ...rest] = await eventsFor(obj);
    assert.equal(rest.length, 0);
    assert.notEqual(second?.metadata.name, first.metadata.name);
  });

  test('files events about cluster-scoped objects in the default namespace', async () => {
    const ns = await client.request(kubeObjectSchema, {
      method: 'GET',
      path: `/api/v1/namespaces/${namespace}`,
    });
    const events = recorder();
    events.event({ ...ns, apiVersion: 'v1', kind: 'Namespace' }, 'Normal', 'Observed', 'namespace seen');
    await events.flush();
    const [event] = await eventsFor({ ...ns, metadata: { ...ns.metadata, namespace: 'default' } });
    assert.equal(event?.involvedObject.kind, 'Namespace');
    assert.equal(event?.involvedObject.namespace, undefined);
  });

  test('drops, with a log line, an event about an object without apiVersion and kind', async () => {
    const events = recorder();
    events.event({ metadata: { name: 'anonymous', namespace } }, 'Normal', 'Nothing', 'never written');
    await events.flush();
    assert.ok(logs.lines.some((l) => l.msg === 'event dropped: the object has no apiVersion/kind'));
  });
});
