import type { CustomResource } from './common/kind.ts';
import { gpuPodKind } from './gpu-pod/schema.ts';
import { gpuVmKind } from './gpu-vm/schema.ts';
import { serverlessEndpointKind } from './serverless-endpoint/schema.ts';

// The registry of the operator's kinds: the CRD generator and the operator both iterate it.

export type { Condition } from '../managed/status-schema.ts';
export type { CustomResource, KindDefinition, PrinterColumn, ScaleSubresource } from './common/kind.ts';
export { API_VERSION, CATEGORY, GROUP, VERSION } from './common/kind.ts';
export { OPERATOR_ENV_PREFIX } from './common/schema.ts';
export type { GpuPodSpec, GpuPodStatus } from './gpu-pod/schema.ts';
export type { GpuVmSpec, GpuVmStatus } from './gpu-vm/schema.ts';
export type { ServerlessEndpointSpec, ServerlessEndpointStatus } from './serverless-endpoint/schema.ts';
export { gpuPodKind, gpuVmKind, serverlessEndpointKind };

export const kinds = [gpuPodKind, gpuVmKind, serverlessEndpointKind] as const;

export type Kind = (typeof kinds)[number];
export type KindName = Kind['kind'];

export type GpuPod = CustomResource<typeof gpuPodKind>;
export type GpuVm = CustomResource<typeof gpuVmKind>;
export type ServerlessEndpoint = CustomResource<typeof serverlessEndpointKind>;
