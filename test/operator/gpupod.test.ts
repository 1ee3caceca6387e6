import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { GpuCloudClient } from '../../src/api/client.ts';
import { EXTERNAL_ID, FINALIZER, OWNER_ENV, SKIP_RECONCILE } from '../../src/managed/core/annotations.ts';
import {
  API_KEY,
  cloudObjects,
  condition,
  isReady,
  manifests,
  resources,
  useOperator,
  useStack,
} from '../support/operator.ts';
import { until } from '../support/until.ts';

const NS = 'pods';
const stack = useStack();

const gpuPod = (name: string, spec: Record<string, unknown> = {}, annotations: Record<string, string> = {}) =>
  manifests.gpuPod(
    name,
    { image: 'pytorch/pytorch:2.4.0', gpuType: 'NVIDIA A100-SXM4-80GB', expose: [{ port: 8888 }], ...spec },
    { annotations },
  );
const cloudPods = (name: string) => cloudObjects(stack.sim()).pods(name);

describe('GpuPod lifecycle', () => {
  const operator = useOperator(stack, [NS]);

  test('creates the pod once, reports it Ready with its cloud details, pauses, resumes and deletes it', async () => {
    const cluster = stack.cluster();
    await cluster.create(resources.gpuPod, NS, gpuPod('trainer'));
    const ready = await cluster.waitFor(resources.gpuPod, NS, 'trainer', isReady('Running'), 'Ready');
    const [cloud, ...others] = cloudPods('trainer');
    assert.ok(cloud, 'one cloud pod named after the resource');
    assert.equal(others.length, 0, 'exactly one cloud pod');
    assert.equal(ready?.metadata.annotations?.[EXTERNAL_ID], cloud.id);
    assert.deepEqual(ready?.metadata.finalizers, [FINALIZER]);
    assert.equal(ready?.status?.id, cloud.id);
    assert.equal(ready?.status?.phase, 'RUNNING');
    assert.equal(ready?.status?.observedGeneration, ready?.metadata.generation);
    assert.equal(cloud.environment[OWNER_ENV], ready?.metadata.uid, 'the cloud pod carries the owner marker');
    const status = ready?.status as Record<string, unknown>;
    assert.equal(typeof status.sshCommand, 'string');
    assert.equal(typeof status.region, 'string');
    const [port] = status.exposedPorts as Array<Record<string, unknown>>;
    assert.match(String(port?.ingressUrl), /^https?:\/\//);
    assert.equal(typeof port?.host, 'string');
    assert.equal(typeof status.cloudType, 'string');
    assert.ok(Math.abs(Date.parse(String(status.createdAt)) - Date.now()) < 60_000, 'createdAt is recent');
    assert.equal(condition(ready, 'Synced')?.status, 'True');

    await cluster.waitFor(
      resources.gpuPod,
      NS,
      'trainer',
      (obj) => typeof obj?.status?.runningSeconds === 'number' && obj.status.metrics !== undefined,
      'runtime and metrics',
    );

    await cluster.patch(resources.gpuPod, NS, 'trainer', { spec: { paused: true } });
    await cluster.waitFor(
      resources.gpuPod,
      NS,
      'trainer',
      (obj) => obj?.status?.phase === 'PAUSED' && isReady('Paused')(obj),
      'Paused',
    );
    assert.equal(cloudPods('trainer')[0]?.status, 'PAUSED');

    await cluster.patch(resources.gpuPod, NS, 'trainer', { spec: { paused: false } });
    await cluster.waitFor(resources.gpuPod, NS, 'trainer', isReady('Running'), 'running again');

    await cluster.delete(resources.gpuPod, NS, 'trainer');
    await cluster.waitFor(resources.gpuPod, NS, 'trainer', (obj) => obj === undefined, 'gone');
    const [deleted] = cloudPods('trainer');
    assert.ok(
      deleted && ['TERMINATING', 'TERMINATED'].includes(deleted.status),
      `cloud pod deleted, saw ${deleted?.status}`,
    );

    const expected = ['Created', 'Pausing', 'Resuming', 'Deleting'];
    await until(
      async () => {
        const reasons = (await cluster.events(NS, 'trainer')).map((event) => event.reason);
        return expected.every((reason) => reasons.includes(reason));
      },
      `events ${expected.join(', ')}`,
    );
  });

  test('resolves env vars from a Secret and never writes the value anywhere but the cloud', async () => {
    const cluster = stack.cluster();
    const value = 'hf_s3cr3t_value_4821';
    await cluster.create(
      resources.gpuPod,
      NS,
      gpuPod('with-secret', {
        environmentVars: [{ key: 'HF_TOKEN', valueFrom: { secretKeyRef: { name: 'hf', key: 'token' } } }],
      }),
    );
    const missing = await cluster.waitFor(
      resources.gpuPod,
      NS,
      'with-secret',
      (obj) => condition(obj, 'Synced')?.reason === 'SecretNotFound',
      'SecretNotFound',
    );
    assert.match(condition(missing, 'Synced')?.message ?? '', /Secret "hf" does not exist/);
    assert.equal(cloudPods('with-secret').length, 0, 'nothing created without the Secret');

    await cluster.create(resources.secret, NS, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'hf' },
      stringData: { token: value },
    });
    // Nudge: any annotation change wakes the resource at once instead of after its backoff.
    await cluster.patch(resources.gpuPod, NS, 'with-secret', { metadata: { annotations: { nudge: '1' } } });
    const ready = await cluster.waitFor(resources.gpuPod, NS, 'with-secret', isReady('Running'), 'Ready');
    assert.equal(cloudPods('with-secret')[0]?.environment.HF_TOKEN, value);

    const events = await cluster.events(NS, 'with-secret');
    const written = JSON.stringify({ status: ready?.status, events, logs: operator().logs });
    assert.ok(!written.includes(value), 'the Secret value is in no status, event or log line');
    assert.ok(!written.includes(API_KEY), 'the API key is in no status, event or log line');
    await cluster.delete(resources.gpuPod, NS, 'with-secret');
  });

  test('deletionPolicy Orphan leaves the cloud pod running', async () => {
    const cluster = stack.cluster();
    await cluster.create(resources.gpuPod, NS, gpuPod('keeper', { deletionPolicy: 'Orphan' }));
    await cluster.waitFor(resources.gpuPod, NS, 'keeper', isReady('Running'), 'Ready');
    await cluster.delete(resources.gpuPod, NS, 'keeper');
    await cluster.waitFor(resources.gpuPod, NS, 'keeper', (obj) => obj === undefined, 'gone');
    assert.equal(cloudPods('keeper')[0]?.status, 'RUNNING');
  });

  test('adopts the cloud pod named by gpucloud.io/external-id instead of creating one', async () => {
    const cluster = stack.cluster();
    const client = new GpuCloudClient({ baseUrl: stack.sim().url, apiKey: API_KEY });
    const existing = await client.pods.create({
      name: 'made-by-hand',
      image: 'ubuntu:24.04',
      gpuType: 'NVIDIA A100-SXM4-80GB',
      gpuCount: 1,
    });
    await client.close();
    await cluster.create(
      resources.gpuPod,
      NS,
      gpuPod('adopter', { name: 'made-by-hand', image: 'ubuntu:24.04' }, { [EXTERNAL_ID]: existing.id }),
    );
    const adopted = await cluster.waitFor(resources.gpuPod, NS, 'adopter', isReady('Running'), 'Ready');
    assert.equal(adopted?.status?.id, existing.id);
    assert.equal(cloudPods('made-by-hand').length, 1, 'no second pod');
  });

  test('an external-id that names nothing is a terminal error, not a create', async () => {
    const cluster = stack.cluster();
    await cluster.create(resources.gpuPod, NS, gpuPod('ghost', {}, { [EXTERNAL_ID]: '999999' }));
    const failed = await cluster.waitFor(
      resources.gpuPod,
      NS,
      'ghost',
      (obj) => condition(obj, 'Synced')?.reason === 'ExternalResourceNotFound',
      'terminal condition',
    );
    assert.match(condition(failed, 'Synced')?.message ?? '', /999999/);
    assert.equal(cloudPods('ghost').length, 0);
  });

  test('skip-reconcile leaves the resource alone', async () => {
    const cluster = stack.cluster();
    await cluster.create(resources.gpuPod, NS, gpuPod('ignored', {}, { [SKIP_RECONCILE]: 'true' }));
    await cluster.create(resources.gpuPod, NS, gpuPod('control'));
    // The control resource, created after, is reconciled: the ignored one would have been by now.
    await cluster.waitFor(resources.gpuPod, NS, 'control', isReady('Running'), 'control Ready');
    const ignored = await cluster.get(resources.gpuPod, NS, 'ignored');
    assert.equal(ignored?.status, undefined);
    assert.equal(ignored?.metadata.finalizers, undefined);
    assert.equal(cloudPods('ignored').length, 0);
  });

  test('skip-reconcile on a managed resource leaves its cloud pod alone and does not hold its deletion', async () => {
    const cluster = stack.cluster();
    await cluster.create(resources.gpuPod, NS, gpuPod('frozen'));
    await cluster.waitFor(resources.gpuPod, NS, 'frozen', isReady('Running'), 'Ready');
    await cluster.patch(resources.gpuPod, NS, 'frozen', {
      metadata: { annotations: { [SKIP_RECONCILE]: 'true' } },
    });
    await cluster.patch(resources.gpuPod, NS, 'frozen', { spec: { paused: true } });
    await cluster.delete(resources.gpuPod, NS, 'frozen');
    await cluster.waitFor(
      resources.gpuPod,
      NS,
      'frozen',
      (obj) => obj === undefined,
      'deleted without waiting on the cloud',
    );
    assert.equal(cloudPods('frozen')[0]?.status, 'RUNNING', 'neither paused nor deleted in the cloud');
  });

  test('a cloud failure shows as Synced=False and clears when the fault stops', async () => {
    const cluster = stack.cluster();
    stack.sim().faults.set({ errorRate: 1 });
    try {
      await cluster.create(resources.gpuPod, NS, gpuPod('unlucky'));
      const failing = await cluster.waitFor(
        resources.gpuPod,
        NS,
        'unlucky',
        (obj) => condition(obj, 'Synced')?.status === 'False',
        'Synced=False',
      );
      assert.equal(condition(failing, 'Synced')?.reason, 'CloudUnavailable');
    } finally {
      stack.sim().faults.reset();
    }
    await cluster.patch(resources.gpuPod, NS, 'unlucky', { metadata: { annotations: { nudge: '1' } } });
    const recovered = await cluster.waitFor(
      resources.gpuPod,
      NS,
      'unlucky',
      isReady('Running'),
      'Ready after the fault',
    );
    assert.equal(condition(recovered, 'Synced')?.status, 'True');
    assert.equal(cloudPods('unlucky').length, 1, 'one pod despite the failed attempts');
  });

  test('a pod the cloud reports FAILED is shown as such, with a Warning event', async () => {
    const cluster = stack.cluster();
    await cluster.create(resources.gpuPod, NS, gpuPod('fragile'));
    const ready = await cluster.waitFor(resources.gpuPod, NS, 'fragile', isReady('Running'), 'Ready');
    assert.ok(stack.sim().faults.failPod(String(ready?.status?.id), 'FAILED'));
    const failed = await cluster.waitFor(
      resources.gpuPod,
      NS,
      'fragile',
      (obj) => obj?.status?.phase === 'FAILED',
      'FAILED',
    );
    assert.equal(condition(failed, 'Ready')?.reason, 'Failed');
    // The event is recorded beside the status write, not before it: waited for, not read once.
    await until(
      async () =>
        (await cluster.events(NS, 'fragile')).some(
          (event) => event.type === 'Warning' && event.reason === 'Failed',
        ),
      'a Warning event names the failure',
    );
  });
});
