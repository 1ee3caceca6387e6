import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { GpuCloudClient } from '../../src/api/client.ts';
import {
  CREATE_INTENT,
  EXTERNAL_ID,
  FINALIZER,
  OWNER_ENV,
  SKIP_RECONCILE,
} from '../../src/managed/core/annotations.ts';
import {
  API_KEY,
  cloudObjects,
  isReady,
  operatorIntent,
  type RunningOperator,
  resources,
  startOperator,
  type TestObject,
  useStack,
} from '../support/operator.ts';
import { poll } from '../support/until.ts';

// These tests stage what a process killed between "create sent" and "id recorded" leaves behind: a
// custom resource with a create intent and no id, and maybe a cloud object made for it.
const NS = 'recovery';
const stack = useStack();
let operator: RunningOperator;
let client: GpuCloudClient;

const ready = isReady();
const cloudPods = (name: string) => cloudObjects(stack.sim()).pods(name);

/**
 * A GpuPod as a crashed process left it: finalizer added, intent recorded long enough ago, no id. The
 * reconcile is held off until `release`, so the test can stage the cloud first.
 */
async function orphanedIntent(name: string): Promise<TestObject> {
  const cr = await stack.cluster().create(resources.gpuPod, NS, {
    apiVersion: 'gpucloud.io/v1alpha1',
    kind: 'GpuPod',
    metadata: { name, finalizers: [FINALIZER], annotations: { [SKIP_RECONCILE]: 'true' } },
    spec: { image: 'ubuntu:24.04', gpuType: 'NVIDIA L40S', gpuCount: 1 },
  });
  const annotations = operatorIntent(cr.metadata.uid, name);
  return stack.cluster().patch(resources.gpuPod, NS, name, { metadata: { annotations } });
}

async function release(name: string): Promise<void> {
  await stack
    .cluster()
    .patch(resources.gpuPod, NS, name, { metadata: { annotations: { [SKIP_RECONCILE]: null } } });
}

describe('recovery from a create interrupted by a crash', () => {
  before(async () => {
    await stack.cluster().ensureNamespace(NS);
    client = new GpuCloudClient({ baseUrl: stack.sim().url, apiKey: API_KEY });
    operator = await startOperator(stack.plane(), stack.sim());
  });
  after(async () => {
    await operator.stop();
    await client.close();
  });

  test('the cloud pod the lost create made is found by its owner marker and adopted, not created again', async () => {
    const cr = await orphanedIntent('interrupted');
    const made = await client.pods.create({
      name: 'interrupted',
      image: 'ubuntu:24.04',
      gpuType: 'NVIDIA L40S',
      gpuCount: 1,
      environmentVars: [{ key: OWNER_ENV, value: cr.metadata.uid }],
    });
    await release('interrupted');
    const adopted = await stack.cluster().waitFor(resources.gpuPod, NS, 'interrupted', ready, 'Ready');
    assert.equal(adopted?.metadata.annotations?.[EXTERNAL_ID], made.id);
    assert.equal(adopted?.metadata.annotations?.[CREATE_INTENT], undefined, 'the intent is retired');
    assert.equal(cloudPods('interrupted').length, 1, 'no second pod');
    await poll(
      async () => (await stack.cluster().events(NS, 'interrupted')).map((event) => event.reason),
      (reasons) => reasons.includes('Recovered'),
      'a Recovered event',
    );
  });

  test('a pod of the same name made for another resource is not taken', async () => {
    await client.pods.create({
      name: 'namesake',
      image: 'ubuntu:24.04',
      gpuType: 'NVIDIA L40S',
      gpuCount: 1,
      environmentVars: [{ key: OWNER_ENV, value: 'some-other-uid' }],
    });
    await orphanedIntent('namesake');
    await release('namesake');
    const created = await stack.cluster().waitFor(resources.gpuPod, NS, 'namesake', ready, 'Ready');
    const pods = cloudPods('namesake');
    assert.equal(pods.length, 2, 'its own pod was created beside the stranger');
    const own = pods.find((pod) => pod.environment[OWNER_ENV] === created?.metadata.uid);
    assert.equal(created?.status?.id, own?.id);
  });

  test('with nothing in the cloud, the interrupted create is made once', async () => {
    await orphanedIntent('never-sent');
    await release('never-sent');
    await stack.cluster().waitFor(resources.gpuPod, NS, 'never-sent', ready, 'Ready');
    assert.equal(cloudPods('never-sent').length, 1);
  });

  test('a resource deleted with an interrupted create still deletes what that create made', async () => {
    // Staged while no operator runs, as after a crash: the CR is deleted before anyone recorded the id.
    await operator.stop();
    const cr = await stack.cluster().create(resources.gpuPod, NS, {
      apiVersion: 'gpucloud.io/v1alpha1',
      kind: 'GpuPod',
      metadata: { name: 'deleted-mid-create', finalizers: [FINALIZER] },
      spec: { image: 'ubuntu:24.04', gpuType: 'NVIDIA L40S', gpuCount: 1 },
    });
    const annotations = operatorIntent(cr.metadata.uid, 'deleted-mid-create');
    await stack.cluster().patch(resources.gpuPod, NS, 'deleted-mid-create', { metadata: { annotations } });
    await client.pods.create({
      name: 'deleted-mid-create',
      image: 'ubuntu:24.04',
      gpuType: 'NVIDIA L40S',
      gpuCount: 1,
      environmentVars: [{ key: OWNER_ENV, value: cr.metadata.uid }],
    });
    await stack.cluster().delete(resources.gpuPod, NS, 'deleted-mid-create');
    operator = await startOperator(stack.plane(), stack.sim());
    await stack
      .cluster()
      .waitFor(resources.gpuPod, NS, 'deleted-mid-create', (obj) => obj === undefined, 'gone');
    const [pod] = cloudPods('deleted-mid-create');
    assert.ok(
      pod && ['TERMINATING', 'TERMINATED'].includes(pod.status),
      `the orphan is deleted, saw ${pod?.status}`,
    );
  });
});
