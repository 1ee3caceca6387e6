import type { Endpoint, EndpointSummary, Task, TaskSummary } from '../../api/schemas/index.ts';
import { usd } from '../catalog.ts';
import { type EndpointRecord, runningWorkers, type TaskRecord } from './endpoint.ts';
import type { EndpointService } from './service.ts';

const REGION_NAMES: Readonly<Record<string, string>> = {
  'us-east-1': 'US East',
  'eu-west-1': 'EU West',
  'ap-southeast-1': 'Asia Pacific Southeast',
};

export function endpointView(endpoint: EndpointRecord, service: EndpointService): Endpoint {
  const { config } = endpoint;
  const perHour = service.hourlyPrice(endpoint);
  return {
    id: endpoint.id,
    name: config.name,
    creator: endpoint.creator,
    domain: endpoint.domain,
    imageRegistry: config.imageRegistry,
    image: config.image,
    resources: config.resources.map(({ region, model, gpuCount }) => ({
      region,
      regionDisplayName: REGION_NAMES[region] ?? region,
      gpuType: model.gpuType,
      gpuDisplayName: model.displayName,
      gpuCount,
      singleCardVramInGb: model.gpuMemoryInGb,
      singleCardVcpu: model.vcpuPerGpu,
      singleCardRamInGb: model.ramPerGpuInGb,
    })),
    minSingleCardVramInGb: config.minSingleCardVramInGb,
    minSingleCardVcpu: config.minSingleCardVcpu,
    minSingleCardRamInGb: config.minSingleCardRamInGb,
    credentialId: config.credentialId,
    containerVolumeInGb: config.containerVolumeInGb,
    initializationCommand: config.initializationCommand,
    environmentVars: config.envVars.map((env) => ({ ...env })),
    expose: config.expose,
    totalWorkers: endpoint.totalWorkers,
    runningWorkers: runningWorkers(endpoint),
    cost: usd(service.cost(endpoint), 6),
    perSecondPrice: usd(perHour / 3600, 8),
    perHourPrice: usd(perHour),
    serviceMode: config.serviceMode,
    webhook: config.webhook,
    status: endpoint.status,
  };
}

export function endpointSummaryView(endpoint: EndpointRecord): EndpointSummary {
  return { id: endpoint.id, name: endpoint.config.name, status: endpoint.status, domain: endpoint.domain };
}

/** The task as listed: without input, output and headers. */
export function taskSummaryView(endpoint: EndpointRecord, task: TaskRecord): TaskSummary {
  return {
    taskId: task.taskId,
    endpointId: endpoint.id,
    endpointName: endpoint.config.name,
    status: task.status,
    workerUrl: task.workerUrl,
    webhook: task.request.webhook ?? endpoint.config.webhook,
    deliveryStatus: task.deliveryStatus,
    deliveryAttempts: task.deliveryAttempts,
    error: task.error,
    createdAt: task.createdAt,
    updatedAt: task.updatedAt,
    deliveredAt: task.deliveredAt,
  };
}

export function taskView(endpoint: EndpointRecord, task: TaskRecord): Task {
  return {
    ...taskSummaryView(endpoint, task),
    input: task.request.input ?? null,
    output: task.output,
    headers: null,
  };
}
