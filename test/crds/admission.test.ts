import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { useControlPlane } from '../support/control-plane.ts';
import { installCrds } from '../support/crds.ts';
import { admitted, endpoint, placed, pod, refused, secretRef, vm } from './admission-cases.ts';
import { CustomResources, createNamespace, rejection } from './cluster.ts';

// Every rule of the CRDs, proven against a real apiserver: what is refused (the cases of
// admission-cases.ts, which `gpucloud plan` must judge alike offline), with which message, and which
// updates go through.

const controlPlane = useControlPlane();
const NAMESPACE = 'crd-admission';
let resources: CustomResources;

// Inside a describe: a top-level before() could run before useControlPlane's has started the plane.
describe('CRD admission', () => {
  before(async () => {
    const { kubeConfig } = controlPlane();
    await installCrds(controlPlane().connection);
    await createNamespace(kubeConfig, NAMESPACE);
    resources = new CustomResources(kubeConfig, NAMESPACE);
  });

  describe('admission of new objects', () => {
    for (const { name, manifest } of admitted) {
      test(`admits ${name}`, async () => {
        await resources.create(manifest, { dryRun: true });
      });
    }

    for (const { name, manifest, code, message } of refused) {
      test(`refuses ${name}`, async () => {
        const refusal = await rejection(resources.create(manifest, { dryRun: true }));
        assert.equal(refusal.code, code, refusal.message);
        assert.match(refusal.message, message);
      });
    }
  });

  describe('updates', () => {
    const fullPod = pod(
      {
        name: 'llm-trainer',
        isSpot: false,
        regions: ['us-east-1'],
        environmentVars: [
          { key: 'MODE', value: 'train' },
          { key: 'HF_TOKEN', valueFrom: secretRef },
        ],
        expose: [{ port: 8888 }],
      },
      'trainer',
    );

    before(async () => {
      await resources.create(fullPod);
      await resources.create(vm({ volumeMountPaths: { 'vol-1': '/data' } }, 'devbox'));
      await resources.create(endpoint({ serviceMode: 'QUEUE' }, 'inference'));
      await resources.create(placed({}, 'placed-trainer'));
    });

    const immutable: Array<[string, string, string, (spec: Record<string, unknown>) => void]> = [
      ['GpuPod', 'trainer', 'gpuType', (spec) => Object.assign(spec, { gpuType: 'NVIDIA H100 80GB HBM3' })],
      ['GpuPod', 'trainer', 'gpuCount', (spec) => Object.assign(spec, { gpuCount: 2 })],
      ['GpuPod', 'trainer', 'image', (spec) => Object.assign(spec, { image: 'pytorch/pytorch:2.5.0' })],
      ['GpuPod', 'trainer', 'name', (spec) => Object.assign(spec, { name: 'renamed' })],
      ['GpuPod', 'trainer', 'name', (spec) => delete spec.name],
      ['GpuPod', 'trainer', 'isSpot', (spec) => Object.assign(spec, { isSpot: true })],
      [
        'GpuPod',
        'trainer',
        'environmentVars',
        (spec) => Object.assign(spec, { environmentVars: [{ key: 'MODE', value: 'eval' }] }),
      ],
      ['GpuPod', 'trainer', 'expose', (spec) => delete spec.expose],
      [
        'GpuPod',
        'trainer',
        'regions',
        (spec) => Object.assign(spec, { regions: ['us-east-1', 'eu-west-1'] }),
      ],
      [
        'GpuPod',
        'placed-trainer',
        'gpuType',
        (spec) => Object.assign(spec, { gpuType: 'NVIDIA L40S', placement: undefined }),
      ],
      ['GpuVm', 'devbox', 'vmTypeId', (spec) => Object.assign(spec, { vmTypeId: 402 })],
      ['GpuVm', 'devbox', 'region', (spec) => Object.assign(spec, { region: 'eu-west-1' })],
      ['GpuVm', 'devbox', 'isSpot', (spec) => Object.assign(spec, { isSpot: true })],
      [
        'GpuVm',
        'devbox',
        'volumeMountPaths',
        (spec) => Object.assign(spec, { volumeMountPaths: { 'vol-1': '/mnt' } }),
      ],
    ];

    // Late-initialised fields may be set once, while absent; then they are as immutable as the rest.
    const setOnce = new Set(['GpuPod name', 'GpuPod isSpot', 'GpuVm isSpot']);
    for (const [kind, name, field, change] of immutable) {
      test(`refuses to change ${kind} ${field}, and says how to change it`, async () => {
        const refused = await rejection(resources.update(kind, name, (object) => change(object.spec ?? {})));
        assert.equal(refused.code, 422, refused.message);
        const rule = setOnce.has(`${kind} ${field}`) ? 'is immutable once set' : 'is immutable';
        assert.match(
          refused.message,
          new RegExp(`spec\\.${field}: .*${field} ${rule}: delete and recreate the ${kind} to change it`),
        );
      });
    }

    test('a late-initialised field left out may be set once', async () => {
      await resources.create(vm({ isSpot: undefined }, 'unset-spot'));
      await resources.update('GpuVm', 'unset-spot', (object) =>
        Object.assign(object.spec ?? {}, { isSpot: true }),
      );
      const refused = await rejection(
        resources.update('GpuVm', 'unset-spot', (object) =>
          Object.assign(object.spec ?? {}, { isSpot: false }),
        ),
      );
      assert.match(refused.message, /isSpot is immutable once set/);
    });

    const allowed: Array<[string, string, string, Record<string, unknown>]> = [
      ['GpuPod', 'trainer', 'pauses a pod', { paused: true }],
      ['GpuPod', 'trainer', 'resumes a pod', { paused: false }],
      ['GpuPod', 'trainer', 'orphans a pod', { deletionPolicy: 'Orphan' }],
      [
        'GpuPod',
        'placed-trainer',
        "changes a placed pod's acceptable offers (its next placement)",
        { placement: { gpuTypes: ['NVIDIA H100 80GB HBM3'], spot: 'Required', maxPricePerGpuHour: 3 } },
      ],
      ['GpuVm', 'devbox', 'names a VM', { name: 'alice-dev' }],
      ['GpuVm', 'devbox', 'renames a VM', { name: 'bob-dev' }],
      ['ServerlessEndpoint', 'inference', 'scales an endpoint', { workers: 5 }],
      ['ServerlessEndpoint', 'inference', 'stops an endpoint', { stopped: true }],
      ['ServerlessEndpoint', 'inference', 'renames an endpoint', { name: 'inference-v2' }],
      [
        'ServerlessEndpoint',
        'inference',
        'changes what an endpoint runs',
        {
          image: 'ghcr.io/example/worker:2.0',
          resources: [{ region: 'eu-west-1', gpuType: 'NVIDIA H100 80GB HBM3', gpuCount: 2 }],
          serviceMode: 'ALB',
          envVars: [{ key: 'MODE', value: 'fast' }],
        },
      ],
    ];

    for (const [kind, name, what, change] of allowed) {
      test(`${what}`, async () => {
        const updated = await resources.update(kind, name, (object) =>
          Object.assign(object.spec ?? {}, change),
        );
        for (const [field, value] of Object.entries(change)) assert.deepEqual(updated.spec?.[field], value);
      });
    }
  });

  describe('defaults', () => {
    test('are filled in by the apiserver, but never for the fields late initialisation fills', async () => {
      const created = await resources.create(pod({ expose: [{ port: 8080 }] }, 'defaulted'), {
        dryRun: true,
      });
      assert.equal(created.spec?.deletionPolicy, 'Delete');
      assert.deepEqual(created.spec?.expose, [{ port: 8080, protocol: 'HTTP' }]);
      // A schema default cannot tell "left out" from "false": adoption would resume a paused pod.
      assert.equal(created.spec?.paused, undefined);
      const sle = await resources.create(endpoint(), { dryRun: true });
      assert.equal(sle.spec?.workers, undefined);
      assert.equal(sle.spec?.stopped, undefined);
    });
  });
});
