// The custom resources the benchmark applies: small, valid specs like the examples', with names that
// sort in creation order and fit every kind's limits (an endpoint name has at most 20 characters).

import { pods, type ResourceType } from '../src/kube/resource-type.ts';
import { API_VERSION } from '../src/resources/kinds.ts';
import {
  GPU_TYPE_LABEL_PREFIX,
  placeLabel,
  VIRTUAL_NODE_LABEL,
  VIRTUAL_NODE_TAINT,
} from '../src/virtual-node/names.ts';
import { RESOURCES } from './stack.ts';

export interface Manifest {
  readonly resource: ResourceType;
  readonly name: string;
  readonly body: Record<string, unknown>;
}

function manifest(resource: ResourceType, name: string, spec: Record<string, unknown>): Manifest {
  return { resource, name, body: { apiVersion: API_VERSION, kind: resource.kind, metadata: { name }, spec } };
}

/** The spec of every GpuPod the benchmark applies. */
export const GPU_POD_SPEC = {
  image: 'pytorch/pytorch:2.4.0',
  gpuType: 'NVIDIA L40S',
  gpuCount: 1,
  expose: [{ port: 8888 }],
} as const;

export function gpuPod(name: string): Manifest {
  return manifest(RESOURCES.gpuPod, name, { ...GPU_POD_SPEC });
}

/**
 * The GpuPod of gpuPod() as a plain Pod bound to virtual node `node`: `spec.nodeName` set as the
 * scheduler's binding would set it, so that the scheduler's own speed is not measured. Its node selector
 * names the GpuPod's GPU type, its port the GpuPod's exposed one.
 */
export function nodePod(name: string, node: string): Manifest {
  const gpuTypeLabel = placeLabel(GPU_TYPE_LABEL_PREFIX, GPU_POD_SPEC.gpuType) ?? '';
  return {
    resource: pods,
    name,
    body: {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name },
      spec: {
        nodeName: node,
        nodeSelector: { [VIRTUAL_NODE_LABEL]: 'true', [gpuTypeLabel]: 'true' },
        tolerations: [{ key: VIRTUAL_NODE_TAINT, operator: 'Exists', effect: 'NoSchedule' }],
        containers: [
          {
            name: 'main',
            image: GPU_POD_SPEC.image,
            ports: GPU_POD_SPEC.expose.map(({ port }) => ({ containerPort: port })),
            resources: { limits: { 'nvidia.com/gpu': String(GPU_POD_SPEC.gpuCount) } },
          },
        ],
      },
    },
  };
}

/** The one GPU type and region placed pods accept: no other phase of the benchmark uses them. */
export const PLACED = { gpuType: 'NVIDIA RTX A6000', region: 'eu-west-1' } as const;

/** A GpuPod that leaves the GPU type to the operator: the placement phase's. */
export function placedGpuPod(name: string): Manifest {
  const { gpuType: _type, ...spec } = GPU_POD_SPEC;
  return manifest(RESOURCES.gpuPod, name, {
    ...spec,
    regions: [PLACED.region],
    placement: { gpuTypes: [PLACED.gpuType] },
  });
}

/**
 * What idle-check runs ask for: paused when every GPU stays below 5% for 5 minutes (the shortest window
 * allowed). The simulator reports 40–100% utilisation unless told otherwise, so these pods stay busy:
 * every check reads a series, none pauses a pod.
 */
export const IDLE_STOP = { gpuUtilizationBelowPercent: 5, forMinutes: 5 } as const;

/** A GpuPod as gpuPod() makes it, with `spec.idleStop`. */
export function idleGpuPod(name: string): Manifest {
  return manifest(RESOURCES.gpuPod, name, { ...GPU_POD_SPEC, idleStop: { ...IDLE_STOP } });
}

export function gpuVm(name: string): Manifest {
  return manifest(RESOURCES.gpuVm, name, { vmTypeId: 401, region: 'us-east-1', isSpot: false });
}

export function serverlessEndpoint(name: string): Manifest {
  return manifest(RESOURCES.serverlessEndpoint, name, {
    image: 'vllm/vllm-openai:v0.6.0',
    resources: [{ region: 'us-east-1', gpuType: 'NVIDIA GeForce RTX 4090', gpuCount: 1 }],
    workers: 1,
    serviceMode: 'QUEUE',
  });
}

/** A task for endpoint `endpoint`: Ready (Complete) once the endpoint ran it. */
export function serverlessTask(name: string, endpoint: string): Manifest {
  return manifest(RESOURCES.serverlessTask, name, { endpointRef: { name: endpoint }, input: { name } });
}

/** `prefix-00042`: names sort in creation order. */
export function names(prefix: string, count: number): string[] {
  return Array.from({ length: count }, (_, index) => `${prefix}-${String(index).padStart(5, '0')}`);
}

/** Roughly what the operator writes for a Ready GpuPod: the raw loop writes the same amount. */
export function readyPodStatus(id: string): Record<string, unknown> {
  const now = new Date().toISOString();
  const condition = (type: string, reason: string) => ({
    type,
    status: 'True',
    observedGeneration: 1,
    lastTransitionTime: now,
    reason,
    message: reason === 'Running' ? 'the pod is running' : '',
  });
  return {
    id,
    phase: 'RUNNING',
    region: 'us-east-1',
    gpuDisplayName: 'L40S',
    sshCommand: `ssh root@${id}.pods.example.com -p 22`,
    internalIp: '10.0.0.1',
    exposedPorts: [
      {
        port: 8888,
        protocol: 'HTTP',
        ingressUrl: `https://${id}-8888.example.com`,
        healthy: true,
        proxyPort: 8888,
        host: `${id}-8888.example.com`,
        serviceName: `svc-${id}`,
      },
    ],
    cloudType: 'SECURE',
    createdAt: now,
    prices: { singleCard: '0.99', containerVolume: '0.0001', persistentVolume: '0.0001' },
    lateInitialized: ['isSpot', 'name', 'paused'],
    cloudFingerprint: 'xxxxxxxxxxxxxxxxxxxxxx',
    observedGeneration: 2,
    conditions: [condition('Ready', 'Running'), condition('Synced', 'ReconcileSuccess')],
    lastSyncTime: now,
  };
}
