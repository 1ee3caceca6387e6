import { API_VERSION } from '../src/resources/kinds.ts';
import type { ResourceType } from '../src/kube/resource-type.ts';
import { resources } from '../test/support/operator.ts';
import type { Random } from './random.ts';

// The custom resources the suite makes: valid specs of every kind that the simulator can serve, and
// the spec changes it applies to them while the operator is being disrupted.

export type KindName = 'GpuPod' | 'GpuVm' | 'ServerlessEndpoint';
export const KIND_NAMES: readonly KindName[] = ['GpuPod', 'GpuVm', 'ServerlessEndpoint'];

export type Spec = Record<string, unknown>;

const RESOURCE: Readonly<Record<KindName, ResourceType>> = {
  GpuPod: resources.gpuPod,
  GpuVm: resources.gpuVm,
  ServerlessEndpoint: resources.serverlessEndpoint,
};

/** Short prefixes for resource names; an endpoint's name must fit the cloud's 20 characters. */
const PREFIX: Readonly<Record<KindName, string>> = { GpuPod: 'pod', GpuVm: 'vm', ServerlessEndpoint: 'sle' };

export function resourceOf(kind: KindName): ResourceType {
  return RESOURCE[kind];
}

export function resourceName(kind: KindName, index: number): string {
  return `${PREFIX[kind]}-${index}`;
}

export function manifest(
  kind: KindName,
  name: string,
  spec: Spec,
  annotations: Record<string, string> = {},
): Record<string, unknown> {
  return { apiVersion: API_VERSION, kind, metadata: { name, annotations }, spec };
}

/** The cloud name the operator gives the resource: `spec.name`, else the resource's own name. */
export function cloudNameOf(name: string, spec: Spec): string {
  return typeof spec.name === 'string' ? spec.name : name;
}

// Models and VM types offered on demand and as spot in us-east-1 by the simulator's catalogue.
const POD_GPUS = ['NVIDIA A100-SXM4-80GB', 'NVIDIA GeForce RTX 4090', 'NVIDIA L40S'];
const VM_TYPES = [201, 401];
const ENDPOINT_GPU = 'NVIDIA GeForce RTX 4090';

/** A valid spec of `kind` with some variety (spot, paused, stopped, several worker counts). */
export function validSpec(kind: KindName, random: Random): Spec {
  switch (kind) {
    case 'GpuPod': {
      const isSpot = random.chance(0.25);
      return {
        image: 'pytorch/pytorch:2.4.0',
        gpuType: random.pick(POD_GPUS),
        gpuCount: random.pick([1, 2]),
        isSpot,
        // Every spot pod recovers, so the faulted run's preemptions always replace something.
        ...(isSpot ? { recoveryPolicy: 'Recreate' } : {}),
        environmentVars: [{ key: 'CHAOS', value: '1' }],
        expose: [{ port: 8888 }],
        paused: random.chance(0.15),
      };
    }
    case 'GpuVm': {
      const isSpot = random.chance(0.25);
      return { vmTypeId: random.pick(VM_TYPES), region: 'us-east-1', isSpot, ...recovery(isSpot, random) };
    }
    case 'ServerlessEndpoint':
      return {
        image: 'ghcr.io/example/worker:1.0',
        resources: [{ region: 'us-east-1', gpuType: ENDPOINT_GPU, gpuCount: 1 }],
        workers: random.int(0, 2),
        expose: { port: 80 },
        stopped: random.chance(0.1),
      };
  }
}

/** Half the spot VMs replace what the cloud preempts; the others stay down. */
function recovery(isSpot: boolean, random: Random): Spec {
  return isSpot && random.chance(0.5) ? { recoveryPolicy: 'Recreate' } : {};
}

/**
 * The pool placed pods find full: the cheapest model they accept, in the one region that offers it. No
 * other spec of the suite uses the model.
 */
export const PLACED_POOL = { gpuType: 'NVIDIA RTX A6000', region: 'eu-west-1', gpus: 1 } as const;

/**
 * A GpuPod that leaves the GPU type to the operator: RTX A6000 (0.79 per GPU-hour, on demand only) or
 * H100 (2.99, or 1.79 spot); with `spot`, spot preferred and replaced after a preemption.
 */
export function placedSpec(spot: boolean): Spec {
  return {
    image: 'pytorch/pytorch:2.4.0',
    gpuCount: 1,
    placement: {
      gpuTypes: [PLACED_POOL.gpuType, 'NVIDIA H100 80GB HBM3'],
      spot: spot ? 'Preferred' : 'Never',
    },
    ...(spot ? { recoveryPolicy: 'Recreate' } : {}),
    environmentVars: [{ key: 'CHAOS', value: '1' }],
  };
}

const UNKNOWN_GPU = 'NVIDIA Imaginary 9000';

/**
 * A spec the CRD admits but the cloud refuses for good (10001, terminal): an unknown GPU model, an
 * unknown VM type. The operator must say so on the resource and not ask again.
 */
export function refusedSpec(kind: KindName): Spec {
  switch (kind) {
    case 'GpuPod':
      return { image: 'pytorch/pytorch:2.4.0', gpuType: UNKNOWN_GPU, gpuCount: 1 };
    case 'GpuVm':
      return { vmTypeId: 999, region: 'us-east-1', isSpot: false };
    case 'ServerlessEndpoint':
      return {
        image: 'ghcr.io/example/worker:1.0',
        resources: [{ region: 'us-east-1', gpuType: UNKNOWN_GPU, gpuCount: 1 }],
      };
  }
}

/**
 * A change a user could make to a live resource, as a merge patch of its spec: pause or resume a
 * pod, rename a VM, rescale, stop or start an endpoint.
 */
export function specChange(kind: KindName, name: string, spec: Spec, random: Random): Spec {
  switch (kind) {
    case 'GpuPod':
      return { paused: spec.paused !== true };
    case 'GpuVm':
      return { name: `${name}-v${random.int(1, 999)}` };
    case 'ServerlessEndpoint':
      return random.chance(0.5) ? { workers: random.int(0, 3) } : { stopped: spec.stopped !== true };
  }
}
