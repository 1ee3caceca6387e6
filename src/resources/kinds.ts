import type { CustomResource } from './common/kind.ts';
import { managedKind } from './common/registration.ts';
import { gpuPodAdapter } from './gpu-pod/adapter.ts';
import { gpuPodKind } from './gpu-pod/schema.ts';
import { gpuPodUsage } from './gpu-pod/usage.ts';
import { gpuVmAdapter } from './gpu-vm/adapter.ts';
import { gpuVmKind } from './gpu-vm/schema.ts';
import { gpuVmUsage } from './gpu-vm/usage.ts';
import { providerConfigKind } from './provider-config/schema.ts';
import { serverlessEndpointAdapter } from './serverless-endpoint/adapter.ts';
import { serverlessEndpointKind } from './serverless-endpoint/schema.ts';
import { serverlessEndpointUsage } from './serverless-endpoint/usage.ts';
import { serverlessTaskAdapter } from './serverless-task/adapter.ts';
import { serverlessTaskKind } from './serverless-task/schema.ts';

// The registry of the operator's kinds: the CRD generator and the operator both iterate it. A new kind
// is one folder (schema and adapter) and one line here.

/** The annotation a resource's user sets to lift the operator's pause: part of the kinds' contract. */
export { EXTERNAL_ID, OWNER_ENV, RESUME } from '../managed/core/annotations.ts';
export type { Condition } from '../managed/core/status-schema.ts';
export type { CustomResource, KindDefinition, PrinterColumn, ScaleSubresource } from './common/kind.ts';
export { API_VERSION, CATEGORY, GROUP, resourceOf, VERSION } from './common/kind.ts';
export type { AdapterOptions, Registration } from './common/registration.ts';
export { OPERATOR_ENV_PREFIX } from './common/schema.ts';
export type { GpuPodSpec, GpuPodStatus } from './gpu-pod/schema.ts';
export type { GpuVmSpec, GpuVmStatus } from './gpu-vm/schema.ts';
export type { ServerlessEndpointSpec, ServerlessEndpointStatus } from './serverless-endpoint/schema.ts';
export type { ServerlessTaskSpec, ServerlessTaskStatus } from './serverless-task/schema.ts';
export { gpuPodKind, gpuVmKind, providerConfigKind, serverlessEndpointKind, serverlessTaskKind };

export const registrations = [
  managedKind(gpuPodKind, gpuPodAdapter, { usage: gpuPodUsage }),
  managedKind(gpuVmKind, gpuVmAdapter, { usage: gpuVmUsage }),
  managedKind(serverlessEndpointKind, serverlessEndpointAdapter, { usage: serverlessEndpointUsage }),
  managedKind(serverlessTaskKind, serverlessTaskAdapter, { references: [serverlessEndpointKind] }),
] as const;

export type Kind = (typeof registrations)[number]['definition'] | typeof providerConfigKind;

/** The kinds whose resources stand for cloud objects. */
export const managedKinds = registrations.map((registration) => registration.definition);
export type ManagedKindName = (typeof managedKinds)[number]['kind'];

/** Every kind of the operator: the managed ones and the accounts they use. */
export const kinds: readonly Kind[] = [
  ...registrations.map((registration) => registration.definition),
  providerConfigKind,
];

export type KindName = Kind['kind'];

export type GpuPod = CustomResource<typeof gpuPodKind>;
export type GpuVm = CustomResource<typeof gpuVmKind>;
export type ServerlessEndpoint = CustomResource<typeof serverlessEndpointKind>;
export type ServerlessTask = CustomResource<typeof serverlessTaskKind>;
