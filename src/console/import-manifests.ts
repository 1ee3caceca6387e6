import type { Pod } from '../api/schemas/pods.ts';
import type { Endpoint } from '../api/schemas/serverless.ts';
import type { Vm, VmTypes } from '../api/schemas/vms.ts';
import { API_VERSION, EXTERNAL_ID, type ManagedKindName, OPERATOR_ENV_PREFIX } from '../resources/kinds.ts';

/** What the cloud adds to a pod's environment: never in a spec (admission refuses it). */
const CLOUD_ENV = ['POD_ID'];
/** The keys a Secret may hold; an env name outside them cannot be referenced as one. */
const SECRET_KEY = /^[-._a-zA-Z0-9]+$/;

/** One cloud object as a manifest, with what its user must know or do before applying it. */
export interface Imported {
  readonly kind: ManagedKindName;
  readonly id: string;
  readonly cloudName: string;
  readonly region: string | undefined;
  readonly phase: string;
  readonly manifest: {
    apiVersion: string;
    kind: ManagedKindName;
    metadata: { name: string; namespace: string; annotations: Record<string, string> };
    spec: Record<string, unknown>;
  };
  /** Comment lines written above the manifest. */
  readonly notes: string[];
  /** The Secret the user must create before the resource may manage the object: its name and keys. */
  readonly secret?: { name: string; keys: string[] } | undefined;
  /** Spec fields holding a placeholder (`path: why`), refused at admission until the user fills them. */
  readonly placeholders: Readonly<Record<string, string>>;
}

/** Where the manifests go, and what they all carry. */
export interface Destination {
  readonly namespace: string;
  /** The ProviderConfig the resources name; none for the default account. */
  readonly providerConfig: string | undefined;
  /** `["Observe"]` unless the user asked for full management. */
  readonly managementPolicies: readonly string[];
}

/** The placeholder of a VM type the cloud does not report and that nothing matches alone. */
export const VM_TYPE_PLACEHOLDER = 0;

function manifest(
  kind: ManagedKindName,
  id: string,
  name: string,
  destination: Destination,
  spec: Record<string, unknown>,
): Imported['manifest'] {
  const { namespace, providerConfig, managementPolicies } = destination;
  return {
    apiVersion: API_VERSION,
    kind,
    metadata: { name, namespace, annotations: { [EXTERNAL_ID]: id } },
    spec: {
      ...definedOnly(spec),
      managementPolicies: [...managementPolicies],
      ...(providerConfig ? { providerConfigRef: { name: providerConfig } } : {}),
    },
  };
}

/**
 * A pod, from its get (the list leaves out the environment, ports and volumes). Each field the spec can
 * carry is the cloud's, so that full management finds nothing to change or report; an env value becomes
 * a reference to a Secret the user creates (values are never written), and what the cloud adds goes.
 */
export function importPod(pod: Pod, name: string, destination: Destination): Imported {
  const secretName = `${name}-env`;
  const env = pod.environmentVars.filter(
    ({ key }) => !CLOUD_ENV.includes(key) && !key.startsWith(OPERATOR_ENV_PREFIX),
  );
  const referable = env.filter(({ key }) => SECRET_KEY.test(key));
  const unreferable = env.filter(({ key }) => !SECRET_KEY.test(key)).map(({ key }) => key);
  const notes: string[] = [];
  if (referable.length > 0) {
    notes.push(
      `environmentVars: the values are not written here. Create Secret ${secretName} in namespace ` +
        `${destination.namespace} with keys ${referable.map(({ key }) => key).join(', ')} (the pod's values; ` +
        `kubectl create secret generic ${secretName} -n ${destination.namespace} --from-literal=KEY=VALUE ...) ` +
        'before switching to full management: the operator compares them with the pod',
    );
  }
  if (unreferable.length > 0) {
    notes.push(`env ${unreferable.join(', ')} left out: a Secret key cannot have that name`);
  }
  const spec = {
    name: pod.name,
    image: pod.image,
    imageRegistry: pod.imageRegistry || undefined,
    imagePublicType: oneOf(pod.imagePublicType, ['PUBLIC', 'PRIVATE']),
    resourceType: oneOf(pod.resourceType, ['GPU', 'CPU']),
    gpuType: pod.gpuType,
    gpuCount: pod.gpuCount,
    regions: [pod.region],
    isSpot: pod.isSpot,
    shmInGb: pod.shmInGb,
    containerVolumeInGb: pod.containerVolumeInGb,
    initializationCommand: pod.initializationCommand || undefined,
    environmentVars:
      referable.length === 0
        ? undefined
        : referable.map(({ key }) => ({ key, valueFrom: { secretKeyRef: { name: secretName, key } } })),
    expose:
      pod.expose.length === 0 ? undefined : pod.expose.map(({ port, protocol }) => ({ port, protocol })),
    volumes:
      pod.volumes.length === 0 ? undefined : pod.volumes.map(({ id, mountPath }) => ({ id, mountPath })),
    paused: pod.status === 'PAUSED' || pod.status === 'PAUSING',
  };
  return {
    kind: 'GpuPod',
    id: pod.id,
    cloudName: pod.name,
    region: pod.region,
    phase: pod.status,
    manifest: manifest('GpuPod', pod.id, name, destination, spec),
    notes,
    secret: referable.length === 0 ? undefined : { name: secretName, keys: referable.map(({ key }) => key) },
    placeholders: {},
  };
}

/**
 * A VM. Its object does not report the type it was made from: the type is inferred from the VM types
 * listing, as the one type of its region and GPU model with its GPU count, CPU cores and memory; when
 * none or several match, it is a placeholder that admission refuses until the user picks one.
 */
export function importVm(vm: Vm, name: string, destination: Destination, types: VmTypes): Imported {
  const candidates = types
    .filter(({ gpuType }) => gpuType === vm.gpuType)
    .flatMap(({ regions }) => regions.filter(({ region }) => region === vm.region))
    .flatMap(({ types: items }) =>
      items.filter(
        (item) =>
          item.gpuCount === vm.gpuCount && item.cpuCores === vm.cpuCores && item.memoryInGb === vm.memoryInGb,
      ),
    )
    .map((item) => item.vmTypeId);
  const [only] = candidates;
  const inferred = candidates.length === 1 ? only : undefined;
  const shape = `${vm.gpuCount} × ${vm.gpuType}, ${vm.cpuCores} CPU cores, ${vm.memoryInGb} GB in ${vm.region}`;
  const placeholders: Record<string, string> =
    inferred === undefined
      ? {
          vmTypeId:
            candidates.length === 0
              ? `PLACEHOLDER: no VM type of today's listing has this VM's shape (${shape}); pick one with gpucloud vm-types`
              : `PLACEHOLDER: VM types ${candidates.join(', ')} all have this VM's shape (${shape}); keep the one it was made from`,
        }
      : {};
  const notes =
    inferred === undefined
      ? ['vmTypeId is a placeholder (0, refused at admission): the VM object does not report its type']
      : [
          `vmTypeId ${inferred} is inferred: the VM object does not report its type, and ${inferred} is the one type of the listing with its shape (${shape})`,
        ];
  const spec = {
    name: vm.name,
    vmTypeId: inferred ?? VM_TYPE_PLACEHOLDER,
    region: vm.region,
    isSpot: vm.isSpot,
  };
  return {
    kind: 'GpuVm',
    id: String(vm.id),
    cloudName: vm.name,
    region: vm.region,
    phase: vm.status,
    manifest: manifest('GpuVm', String(vm.id), name, destination, spec),
    notes,
    placeholders,
  };
}

/**
 * An endpoint, from the list (which carries everything). Its environment is left out: an adopted
 * endpoint's environment is its own until the spec names one, and naming it would make the operator add
 * its owner marker (one update); the values would have to come from Secrets anyway.
 */
export function importEndpoint(endpoint: Endpoint, name: string, destination: Destination): Imported {
  const env = endpoint.environmentVars.filter(({ key }) => !key.startsWith(OPERATOR_ENV_PREFIX));
  const notes =
    env.length === 0
      ? []
      : [
          `envVars (${env.map(({ key }) => key).join(', ')}) left out: the operator leaves an adopted endpoint's ` +
            'environment as it is until the spec names one; name them from Secrets (valueFrom.secretKeyRef) to manage them',
        ];
  const spec = {
    name: endpoint.name,
    image: endpoint.image,
    imageRegistry: endpoint.imageRegistry || undefined,
    resources: endpoint.resources.map(({ region, gpuType, gpuCount }) => ({ region, gpuType, gpuCount })),
    minSingleCardVramInGb: endpoint.minSingleCardVramInGb,
    minSingleCardVcpu: endpoint.minSingleCardVcpu,
    minSingleCardRamInGb: endpoint.minSingleCardRamInGb,
    workers: endpoint.totalWorkers,
    credentialId: endpoint.credentialId === null ? undefined : Number(endpoint.credentialId),
    containerVolumeInGb: endpoint.containerVolumeInGb,
    initializationCommand: endpoint.initializationCommand || undefined,
    expose: endpoint.expose ?? undefined,
    serviceMode: oneOf(endpoint.serviceMode, ['ALB', 'QUEUE', 'CUSTOM']),
    webhook: endpoint.webhook ?? undefined,
    stopped: endpoint.status === 'STOPPED' || endpoint.status === 'STOPPING',
  };
  return {
    kind: 'ServerlessEndpoint',
    id: endpoint.id,
    cloudName: endpoint.name,
    region: endpoint.resources[0]?.region,
    phase: endpoint.status,
    manifest: manifest('ServerlessEndpoint', endpoint.id, name, destination, spec),
    notes,
    placeholders: {},
  };
}

function oneOf<T extends string>(value: string, allowed: readonly T[]): T | undefined {
  return allowed.find((candidate) => candidate === value);
}

function definedOnly(fields: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined));
}
