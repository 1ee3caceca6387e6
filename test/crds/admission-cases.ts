import { API_VERSION } from '../../src/resources/kinds.ts';
import type { Manifest } from './examples.ts';

// The admission cases of the CRDs: manifests the apiserver admits and those it refuses, with the status
// code and the message it refuses them with. test/crds/admission.test.ts proves each against a real
// apiserver; test/console/plan-admission.test.ts runs the same list through `gpucloud plan` offline,
// which must reach the same verdict.

export interface AdmissionCase {
  readonly name: string;
  readonly manifest: Manifest;
}

export interface RefusalCase extends AdmissionCase {
  /** 422 Invalid for a value the schema or a rule refuses; 400 for a field strict decoding does not know. */
  readonly code: 400 | 422;
  readonly message: RegExp;
}

const manifest = (kind: string, spec: Record<string, unknown>, name: string): Manifest => ({
  apiVersion: API_VERSION,
  kind,
  metadata: { name },
  spec,
});
export const pod = (spec: Record<string, unknown> = {}, name = 'pod') =>
  manifest('GpuPod', { image: 'pytorch/pytorch:2.4.0', gpuType: 'NVIDIA L40S', gpuCount: 1, ...spec }, name);
/** A pod that leaves the GPU type, region and spot to the operator. */
export const placed = (spec: Record<string, unknown> = {}, name = 'placed') =>
  pod({ gpuType: undefined, placement: { gpuTypes: ['NVIDIA L40S', 'NVIDIA RTX A6000'] }, ...spec }, name);
export const vm = (spec: Record<string, unknown> = {}, name = 'vm') =>
  manifest('GpuVm', { vmTypeId: 401, region: 'us-east-1', isSpot: false, ...spec }, name);
export const endpoint = (spec: Record<string, unknown> = {}, name = 'endpoint') =>
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
export const secretRef = { secretKeyRef: { name: 'tokens', key: 'hf' } };

export const admitted: readonly AdmissionCase[] = [
  { name: 'a GpuPod of one GPU type', manifest: pod() },
  { name: 'a placed GpuPod', manifest: placed() },
  { name: 'a GpuVm', manifest: vm() },
  { name: 'a ServerlessEndpoint', manifest: endpoint() },
  {
    name: 'a placed pod that leaves the types open by memory, and recovers on spot it prefers',
    manifest: placed({
      minSingleCardVramInGb: 40,
      placement: { spot: 'Preferred', maxPricePerGpuHour: 2, order: 'Cheapest', maxAttempts: 5 },
      recoveryPolicy: 'Recreate',
    }),
  },
];

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
  ['imageRegistry over 255 characters', pod({ imageRegistry: text(256) }), /spec\.imageRegistry: Too long/],
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
  ['exposed port 0', pod({ expose: [{ port: 0 }] }), /spec\.expose\[0\]\.port: .*greater than or equal to 1/],
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
  ['webhook over 2048 characters', endpoint({ webhook: `https://${text(2041)}` }), /spec\.webhook: Too long/],
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

export const refused: readonly RefusalCase[] = [
  ...invalid.map(([name, manifest, message]) => ({ name, manifest, code: 422 as const, message })),
  {
    name: 'callbackUrl: the operator owns the pod callback URL',
    manifest: pod({ callbackUrl: 'https://example.com/cb' }),
    code: 400,
    message: /unknown field "spec\.callbackUrl"/,
  },
];
