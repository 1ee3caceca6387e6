import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { API_VERSION } from '../../src/resources/kinds.ts';
import { useControlPlane } from '../support/control-plane.ts';
import { installCrds } from '../support/crds.ts';
import { CustomResources, createNamespace, rejection } from './cluster.ts';
import type { Manifest } from './examples.ts';

// Every rule of the CRDs, proven against a real apiserver: what is refused, with which message, and
// which updates go through.

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

  const manifest = (kind: string, spec: Record<string, unknown>, name: string): Manifest => ({
    apiVersion: API_VERSION,
    kind,
    metadata: { name },
    spec,
  });
  const pod = (spec: Record<string, unknown> = {}, name = 'pod') =>
    manifest(
      'GpuPod',
      { image: 'pytorch/pytorch:2.4.0', gpuType: 'NVIDIA L40S', gpuCount: 1, ...spec },
      name,
    );
  /** A pod that leaves the GPU type, region and spot to the operator. */
  const placed = (spec: Record<string, unknown> = {}, name = 'placed') =>
    pod({ gpuType: undefined, placement: { gpuTypes: ['NVIDIA L40S', 'NVIDIA RTX A6000'] }, ...spec }, name);
  const vm = (spec: Record<string, unknown> = {}, name = 'vm') =>
    manifest('GpuVm', { vmTypeId: 401, region: 'us-east-1', isSpot: false, ...spec }, name);
  const endpoint = (spec: Record<string, unknown> = {}, name = 'endpoint') =>
    manifest(
      'ServerlessEndpoint',
      {
        image: 'ghcr.io/example/worker:1.0',
        resources: [{ region: 'us-east-1', gpuType: 'NVIDIA L40S', gpuCount: 1 }],
        ...spec,
      },
      name,
    );
  const text = (length: number) => 'a'.repeat(length);
  const secretRef = { secretKeyRef: { name: 'tokens', key: 'hf' } };

  describe('admission of new objects', () => {
    test('the base manifests the invalid cases derive from are accepted', async () => {
      for (const valid of [pod(), placed(), vm(), endpoint()])
        await resources.create(valid, { dryRun: true });
    });

    test('a placed pod may leave the types open by memory, and recover on spot it prefers', async () => {
      await resources.create(
        placed({
          minSingleCardVramInGb: 40,
          placement: { spot: 'Preferred', maxPricePerGpuHour: 2, order: 'Cheapest', maxAttempts: 5 },
          recoveryPolicy: 'Recreate',
        }),
        { dryRun: true },
      );
    });

    const invalid: Array<[string, Manifest, RegExp]> = [
      ['gpuCount not a power of 2', pod({ gpuCount: 3 }), /spec\.gpuCount: .*gpuCount must be a power of 2/],
      ['gpuCount of 0', pod({ gpuCount: 0 }), /spec\.gpuCount: .*should be greater than or equal to 1/],
      ['empty pod name', pod({ name: '' }), /spec\.name: .*at least 1 chars long/],
      [
        'pod name over 255 characters',
        pod({ name: text(256) }),
        /spec\.name: Too long: may not be (longer|more) than 255/,
      ],
      ['empty image', pod({ image: '' }), /spec\.image: .*at least 1 chars long/],
      ['image over 255 characters', pod({ image: text(256) }), /spec\.image: Too long/],
      [
        'imageRegistry over 255 characters',
        pod({ imageRegistry: text(256) }),
        /spec\.imageRegistry: Too long/,
      ],
      [
        'unknown imagePublicType',
        pod({ imagePublicType: 'SHARED' }),
        /spec\.imagePublicType: Unsupported value: "SHARED"/,
      ],
      ['unknown resourceType', pod({ resourceType: 'TPU' }), /spec\.resourceType: Unsupported value: "TPU"/],
      ['empty gpuType', pod({ gpuType: '' }), /spec\.gpuType: .*at least 1 chars long/],
      [
        'neither gpuType nor placement',
        pod({ gpuType: undefined }),
        /spec: Invalid value: .*set exactly one of gpuType \(one GPU model\) and placement/,
      ],
      [
        'both gpuType and placement',
        pod({ placement: { gpuTypes: ['NVIDIA L40S'] } }),
        /set exactly one of gpuType \(one GPU model\) and placement/,
      ],
      [
        'placement with isSpot',
        placed({ isSpot: true }),
        /spec\.placement: .*spot and the price cap are placement\.spot and placement\.maxPricePerGpuHour: remove isSpot and maxPrice/,
      ],
      [
        'placement that names no GPU that fits',
        placed({ placement: { spot: 'Preferred' } }),
        /spec\.placement: .*say which GPUs fit: placement\.gpuTypes, or minSingleCardVramInGb/,
      ],
      [
        'placement on a CPU pod',
        placed({ resourceType: 'CPU' }),
        /spec\.placement: .*placement chooses among GPU machines: a CPU pod names gpuType/,
      ],
      [
        'placement order Listed without gpuTypes',
        placed({ minSingleCardVramInGb: 40, placement: { order: 'Listed' } }),
        /spec\.placement\.order: .*order Listed follows gpuTypes/,
      ],
      [
        'Recreate on a pod placed on demand only',
        placed({ recoveryPolicy: 'Recreate' }),
        /spec\.recoveryPolicy: .*set isSpot: true, or placement\.spot Preferred or Required/,
      ],
      [
        'a price cap of 0',
        placed({ placement: { gpuTypes: ['g'], maxPricePerGpuHour: 0 } }),
        /maxPricePerGpuHour: .*greater than 0/,
      ],
      [
        'maxPrice without isSpot',
        pod({ maxPrice: 1.5 }),
        /spec\.maxPrice: .*maxPrice is only valid for spot pods/,
      ],
      ['maxPrice on demand', pod({ isSpot: false, maxPrice: 1.5 }), /maxPrice is only valid for spot pods/],
      ['maxPrice of 0', pod({ isSpot: true, maxPrice: 0 }), /spec\.maxPrice: .*should be greater than 0/],
      ['negative shmInGb', pod({ shmInGb: -1 }), /spec\.shmInGb: .*greater than or equal to 0/],
      [
        'containerRegistryAuthId of 0',
        pod({ containerRegistryAuthId: 0 }),
        /spec\.containerRegistryAuthId: .*greater than or equal to 1/,
      ],
      [
        'env var with both value and valueFrom',
        pod({ environmentVars: [{ key: 'HF_TOKEN', value: 'x', valueFrom: secretRef }] }),
        /spec\.environmentVars\[0\]: .*set exactly one of value and valueFrom/,
      ],
      [
        'env var with neither value nor valueFrom',
        pod({ environmentVars: [{ key: 'HF_TOKEN' }] }),
        /set exactly one of value and valueFrom/,
      ],
      [
        'env var POD_ID',
        pod({ environmentVars: [{ key: 'POD_ID', value: '1' }] }),
        /spec\.environmentVars\[0\]\.key: .*POD_ID is reserved: the cloud sets it on every pod/,
      ],
      [
        'env var with the operator prefix',
        pod({ environmentVars: [{ key: 'GPUCLOUD_OWNER', value: 'me' }] }),
        /spec\.environmentVars\[0\]\.key: .*names starting with GPUCLOUD_ are reserved for the operator/,
      ],
      [
        'the same env var twice',
        pod({
          environmentVars: [
            { key: 'A', value: '1' },
            { key: 'A', value: '2' },
          ],
        }),
        /spec\.environmentVars\[1\]: Duplicate value/,
      ],
      [
        'Secret key with a slash',
        pod({ environmentVars: [{ key: 'A', valueFrom: { secretKeyRef: { name: 's', key: 'a/b' } } }] }),
        /spec\.environmentVars\[0\]\.valueFrom\.secretKeyRef\.key: .*should match/,
      ],
      [
        'Secret name that is no DNS subdomain',
        pod({ environmentVars: [{ key: 'A', valueFrom: { secretKeyRef: { name: '../Other', key: 'a' } } }] }),
        /spec\.environmentVars\[0\]\.valueFrom\.secretKeyRef\.name: .*should match/,
      ],
      [
        'exposed port 0',
        pod({ expose: [{ port: 0 }] }),
        /spec\.expose\[0\]\.port: .*greater than or equal to 1/,
      ],
      [
        'exposed port 65536',
        pod({ expose: [{ port: 65536 }] }),
        /spec\.expose\[0\]\.port: .*less than or equal to 65535/,
      ],
      [
        'the same port exposed twice',
        pod({ expose: [{ port: 80 }, { port: 80 }] }),
        /spec\.expose\[1\]: Duplicate value/,
      ],
      [
        'relative volume mount path',
        pod({ volumes: [{ id: 'v', mountPath: 'data' }] }),
        /spec\.volumes\[0\]\.mountPath: .*should match/,
      ],
      [
        'unknown deletionPolicy',
        pod({ deletionPolicy: 'Keep' }),
        /spec\.deletionPolicy: Unsupported value: "Keep"/,
      ],
      ['vmTypeId of 0', vm({ vmTypeId: 0 }), /spec\.vmTypeId: .*greater than or equal to 1/],
      [
        'a VM with neither a type nor placement',
        vm({ vmTypeId: undefined }),
        /set vmTypeId and region \(one VM type\), or placement/,
      ],
      [
        'a placed VM naming its region',
        vm({ vmTypeId: undefined, isSpot: undefined, placement: { gpuTypes: ['g'], gpuCount: 1 } }),
        /set vmTypeId and region \(one VM type\), or placement \(the operator chooses\) without vmTypeId, region or isSpot/,
      ],
      [
        'a placed VM that names no GPU that fits',
        vm({ vmTypeId: undefined, region: undefined, isSpot: undefined, placement: { gpuCount: 1 } }),
        /spec\.placement: .*say which GPUs fit: gpuTypes, or minGpuMemoryInGb/,
      ],
      ['empty VM region', vm({ region: '' }), /spec\.region: .*at least 1 chars long/],
      [
        'Recreate on an on-demand VM',
        vm({ recoveryPolicy: 'Recreate' }),
        /spec\.recoveryPolicy: .*recoveryPolicy Recreate is only for spot capacity/,
      ],
      [
        'Recreate without Delete in managementPolicies',
        pod({ isSpot: true, recoveryPolicy: 'Recreate', managementPolicies: ['Observe', 'Create'] }),
        /recoveryPolicy Recreate needs Create and Delete/,
      ],
      [
        "'*' with other policies",
        pod({ managementPolicies: ['*', 'Delete'] }),
        /'\*' allows every action and stands alone/,
      ],
      ['policies without Observe', pod({ managementPolicies: ['Create'] }), /must include Observe/],
      [
        'an unknown policy',
        pod({ managementPolicies: ['Observe', 'Pause'] }),
        /spec\.managementPolicies\[1\]: Unsupported value/,
      ],
      ['VM name over 255 characters', vm({ name: text(256) }), /spec\.name: Too long/],
      [
        'relative VM mount path',
        vm({ volumeMountPaths: { v1: 'home' } }),
        /spec\.volumeMountPaths\.v1: .*should match/,
      ],
      ['endpoint name starting with a digit', endpoint({ name: '1abc' }), /spec\.name: .*should match/],
      ['endpoint name of 21 characters', endpoint({ name: text(21) }), /spec\.name: Too long/],
      ['endpoint name with a space', endpoint({ name: 'my endpoint' }), /spec\.name: .*should match/],
      [
        'metadata.name too long for an endpoint and no spec.name',
        endpoint({}, 'text-embeddings-production'),
        /spec\.name: .*spec\.name is required when metadata\.name is not a valid endpoint name/,
      ],
      [
        'metadata.name starting with a digit and no spec.name',
        endpoint({}, '9lives'),
        /spec\.name is required when metadata\.name/,
      ],
      ['no resources', endpoint({ resources: [] }), /spec\.resources: .*at least 1 items?/],
      [
        'the same region and GPU twice',
        endpoint({
          resources: [
            { region: 'r', gpuType: 'g', gpuCount: 1 },
            { region: 'r', gpuType: 'g', gpuCount: 2 },
          ],
        }),
        /spec\.resources\[1\]: Duplicate value/,
      ],
      [
        'resource gpuCount of 0',
        endpoint({ resources: [{ region: 'r', gpuType: 'g', gpuCount: 0 }] }),
        /spec\.resources\[0\]\.gpuCount: .*greater than or equal to 1/,
      ],
      ['negative workers', endpoint({ workers: -1 }), /spec\.workers: .*greater than or equal to 0/],
      [
        'unknown serviceMode',
        endpoint({ serviceMode: 'BATCH' }),
        /spec\.serviceMode: Unsupported value: "BATCH"/,
      ],
      [
        'webhook not http(s)',
        endpoint({ webhook: 'ftp://example.com/results' }),
        /spec\.webhook: .*should match/,
      ],
      [
        'webhook over 2048 characters',
        endpoint({ webhook: `https://${text(2041)}` }),
        /spec\.webhook: Too long/,
      ],
      [
        'endpoint port 70000',
        endpoint({ expose: { port: 70000 } }),
        /spec\.expose\.port: .*less than or equal to 65535/,
      ],
      [
        'endpoint env var with the operator prefix',
        endpoint({ envVars: [{ key: 'GPUCLOUD_OWNER', value: 'me' }] }),
        /spec\.envVars\[0\]\.key: .*reserved for the operator/,
      ],
    ];

    for (const [name, object, message] of invalid) {
      test(`refuses ${name}`, async () => {
        const refused = await rejection(resources.create(object, { dryRun: true }));
        assert.equal(refused.code, 422, refused.message);
        assert.match(refused.message, message);
      });
    }

    test('refuses callbackUrl: the operator owns the pod callback URL', async () => {
      const refused = await rejection(
        resources.create(pod({ callbackUrl: 'https://example.com/cb' }), { dryRun: true }),
      );
      assert.equal(refused.code, 400, refused.message);
      assert.match(refused.message, /unknown field "spec\.callbackUrl"/);
    });
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
