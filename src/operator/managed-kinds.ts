import type { z } from 'zod';
import type { GpuCloudClient } from '../api/client.ts';
import type { ManagedKind } from '../managed/controller.ts';
import type { CommonSpec, ExternalKind } from '../managed/external-kind.ts';
import { gpuPodAdapter } from '../resources/gpu-pod/adapter.ts';
import { gpuVmAdapter } from '../resources/gpu-vm/adapter.ts';
import { gpuPodKind, gpuVmKind, type KindDefinition, serverlessEndpointKind } from '../resources/kinds.ts';
import { serverlessEndpointAdapter } from '../resources/serverless-endpoint/adapter.ts';

export interface ManagedKindsOptions {
  /** The pod callback URL to register with the cloud, when callbacks are served. */
  podCallbackUrl?: string | undefined;
}

/** Every kind the operator manages: its schema (from the kinds registry) joined with its adapter. */
export function managedKinds(client: GpuCloudClient, options: ManagedKindsOptions = {}) {
  return {
    gpuPod: managed(gpuPodKind, gpuPodAdapter(client, { callbackUrl: options.podCallbackUrl })),
    gpuVm: managed(gpuVmKind, gpuVmAdapter(client)),
    serverlessEndpoint: managed(serverlessEndpointKind, serverlessEndpointAdapter(client)),
  };
}

function managed<Spec extends CommonSpec, Cloud>(
  definition: Pick<KindDefinition, 'group' | 'version' | 'plural' | 'kind'> & { spec: z.ZodType<Spec> },
  adapter: ExternalKind<Spec, Cloud>,
): ManagedKind<Spec, Cloud> {
  const { group, version, plural, kind } = definition;
  return {
    resource: { group, version, plural, kind, namespaced: true },
    adapter,
    parseSpec: (raw) => definition.spec.parse(raw),
  };
}
