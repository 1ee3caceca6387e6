import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { ExternalKind, ManagedObject } from '../../src/managed/core/external-kind.ts';
import { SECRET_ROTATED } from '../../src/managed/reporting/status-report.ts';
import { gpuPodAdapter } from '../../src/resources/gpu-pod/adapter.ts';
import type { PodView } from '../../src/resources/gpu-pod/details.ts';
import { type GpuPodSpec, GpuPodSpecSchema } from '../../src/resources/gpu-pod/schema.ts';
import { actContext, type Cloud, resource, startCloud } from './adapter-support.ts';

// A pod's environment against its Secrets, on the simulator in-process: the Secrets whose values it no
// longer carries, and a get only when one may have changed (a restart's list view costs no get).
const spec = GpuPodSpecSchema.parse({
  image: 'ghcr.io/acme/trainer:1',
  gpuType: 'NVIDIA L40S',
  gpuCount: 1,
  environmentVars: [
    { key: 'HF_TOKEN', valueFrom: { secretKeyRef: { name: 'hf', key: 'token' } } },
    { key: 'MODE', value: 'train' },
  ],
});

describe('GpuPod rotated Secrets', () => {
  let cloud: Cloud;
  let adapter: ExternalKind<GpuPodSpec, PodView>;
  let mr: ManagedObject<GpuPodSpec>;
  let full: PodView;
  let listedView: PodView;
  const rotated = (
    view: PodView,
    secrets: Record<string, Record<string, string>>,
    changed = false,
    pod = mr,
  ) =>
    adapter.secrets?.rotatedSecrets?.(pod, view, {
      ...actContext(pod, secrets),
      secretsChanged: () => changed,
    }) ?? Promise.resolve(undefined);

  before(async () => {
    cloud = await startCloud();
    adapter = gpuPodAdapter(cloud.client);
    mr = resource('GpuPod', spec);
    const made = await adapter.create(mr, actContext(mr, { hf: { token: 'old' } }));
    full = (await adapter.get(made.id)) as PodView;
    listedView = (await adapter.list()).find((item) => item.id === made.id) as PodView;
    assert.equal(listedView.environmentVars, undefined, 'the list view has no environment');
  });
  after(async () => cloud.stop());

  it('names the Secrets whose values the pod does not carry, from a view with its environment', async () => {
    assert.deepEqual(await rotated(full, { hf: { token: 'old' } }), []);
    assert.deepEqual(await rotated(full, { hf: { token: 'new' } }), ['hf']);
  });

  it('spends a get on a view without the environment only when a Secret changed or a rotation is reported', async () => {
    const gets = () => cloud.callsOf('pods.get');
    const before = gets();
    assert.deepEqual(
      await rotated(listedView, { hf: { token: 'new' } }),
      [],
      'a restart: no get, no verdict',
    );
    assert.equal(gets(), before);
    assert.deepEqual(await rotated(listedView, { hf: { token: 'new' } }, true), ['hf']);
    assert.equal(gets(), before + 1);
    const reporting = resource(
      'GpuPod',
      spec,
      {},
      {
        conditions: [
          { type: 'Synced', status: 'False', reason: SECRET_ROTATED, message: '', lastTransitionTime: '' },
        ],
      },
    );
    assert.deepEqual(
      await rotated(listedView, { hf: { token: 'old' } }, false, { ...reporting, metadata: mr.metadata }),
      [],
      'a reported rotation is looked at again, and is over once the Secret is back',
    );
    assert.equal(gets(), before + 2);
  });

  it('a pod without Secret-sourced env has nothing to compare', async () => {
    const plain = resource(
      'GpuPod',
      GpuPodSpecSchema.parse({ image: 'x:1', gpuType: 'NVIDIA L40S', gpuCount: 1 }),
    );
    assert.deepEqual(await rotated(full, {}, true, plain), []);
  });
});
