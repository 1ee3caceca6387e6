import { z } from 'zod';
import { listMap, withRules } from '../../kube/schema-meta.ts';
import { baseStatusShape } from '../../managed/core/status-schema.ts';
import { defineKind } from '../common/kind.ts';
import {
  cloudIdSchema,
  environmentVariablesSchema,
  exposedPortSchema,
  gpuTypeSchema,
  ignoreDriftSchema,
  imageRegistrySchema,
  imageSchema,
  initializationCommandSchema,
  irremovable,
  LATE_INITIALIZED,
  managedSpecShape,
  providerConfigRefRule,
  regionSchema,
  sizeSchema,
} from '../common/schema.ts';

const KIND = 'ServerlessEndpoint';

/** Late initialisation fills these, so the cloud may own them (`ignoreDrift`). */
const LATE_INITIALIZED_FIELDS = [
  'name',
  'imageRegistry',
  'minSingleCardVramInGb',
  'minSingleCardVcpu',
  'minSingleCardRamInGb',
  'workers',
  'credentialId',
  'containerVolumeInGb',
  'initializationCommand',
  'expose',
  'serviceMode',
  'webhook',
  'stopped',
];

// The cloud's pattern is ^(?=[A-Za-z])[A-Za-z0-9@._-]{1,20}$; the apiserver's regex engine (RE2)
// has no lookahead, so the first letter is matched explicitly.
const ENDPOINT_NAME_PATTERN = '^[A-Za-z][A-Za-z0-9@._-]{0,19}$';
const ENDPOINT_NAME_RULE = '1 to 20 characters, starting with a letter, made of letters, digits and @ . _ -';

const resourceSchema = z
  .object({
    region: regionSchema.describe('Region code.'),
    gpuType: gpuTypeSchema.describe('GPU model.'),
    gpuCount: z.int32().min(1).describe('Number of GPUs per worker.'),
  })
  .describe('A region and GPU model workers may run on.');

// Mirrors the v2 endpoint create request. The update request takes the same fields, so unlike the
// other kinds every field can change.
const ServerlessEndpointSpecObject = z
  .object({
    name: z
      .string()
      .max(20)
      .regex(new RegExp(ENDPOINT_NAME_PATTERN))
      .optional()
      .describe(
        `Name of the endpoint in the cloud: ${ENDPOINT_NAME_RULE}; metadata.name for a new endpoint, which must then fit. ${LATE_INITIALIZED} Removing it renames the endpoint to metadata.name.`,
      ),
    imageRegistry: imageRegistrySchema
      .optional()
      .describe(
        `URL of the image registry, at most 255 characters. ${LATE_INITIALIZED} Removing it clears it.`,
      ),
    image: imageSchema.describe('Container image the workers run, 1 to 255 characters.'),
    resources: listMap(z.array(resourceSchema).min(1).max(16), ['region', 'gpuType']).describe(
      'Where workers may run: one entry per region and GPU model.',
    ),
    minSingleCardVramInGb: sizeSchema
      .optional()
      .describe(
        `Minimum video memory per GPU card, in GB. ${LATE_INITIALIZED} Removing it sets 0 (no minimum).`,
      ),
    minSingleCardVcpu: sizeSchema
      .optional()
      .describe(`Minimum vCPUs per GPU card. ${LATE_INITIALIZED} Removing it sets 0 (no minimum).`),
    minSingleCardRamInGb: sizeSchema
      .optional()
      .describe(`Minimum RAM per GPU card, in GB. ${LATE_INITIALIZED} Removing it sets 0 (no minimum).`),
    workers: z
      .int32()
      .min(0)
      .optional()
      .describe(
        'Number of workers; 1 for a new endpoint. `kubectl scale serverlessendpoint/<name> --replicas=N` ' +
          `sets it. ${LATE_INITIALIZED} It cannot be removed, unless autoscaling takes over.`,
      ),
    autoscaling: z
      .object({
        minWorkers: z.int32().min(0).describe('Fewest workers; 0 lets an idle endpoint scale to zero.'),
        maxWorkers: z.int32().min(1).describe('Most workers.'),
        targetQueuePerWorker: z
          .int32()
          .min(1)
          .describe('Tasks in flight (processing and delivered) one worker should have.'),
        scaleDownDelaySeconds: z
          .int32()
          .min(0)
          .max(3600)
          .optional()
          .describe(
            'Fewer workers only when every recommendation of this many seconds allowed it; 300 when unset.',
          ),
      })
      .meta({
        'x-kubernetes-validations': [
          { rule: 'self.minWorkers <= self.maxWorkers', message: 'minWorkers must not exceed maxWorkers' },
        ],
      })
      .optional()
      .describe(
        "The operator's own queue autoscaling: workers = ceil(tasks in flight / targetQueuePerWorker) " +
          'within [minWorkers, maxWorkers], with a 10% tolerance band and scaleDownDelaySeconds before ' +
          'scaling down. QUEUE endpoints only, and without spec.workers: kubectl scale and an HPA are ' +
          'refused on an autoscaled endpoint.',
      ),
    credentialId: cloudIdSchema
      .optional()
      .describe(
        `Id of the registry credential in the cloud, for a private image. ${LATE_INITIALIZED} It cannot be removed.`,
      ),
    containerVolumeInGb: sizeSchema
      .optional()
      .describe(
        `Size of the container volume of each worker, in GB. ${LATE_INITIALIZED} It cannot be removed.`,
      ),
    initializationCommand: initializationCommandSchema
      .optional()
      .describe(
        `Command run when a worker starts, at most 8192 characters. ${LATE_INITIALIZED} Removing it clears it.`,
      ),
    envVars: environmentVariablesSchema('worker', [])
      .optional()
      .describe(
        'Environment variables of the workers. Names starting with GPUCLOUD_ are reserved for the operator.',
      ),
    expose: exposedPortSchema('http')
      .optional()
      .describe(`The worker port that serves requests. ${LATE_INITIALIZED} It cannot be removed.`),
    serviceMode: z
      .enum(['ALB', 'QUEUE', 'CUSTOM'])
      .optional()
      .describe(
        `How requests reach workers: ALB (load balancer), QUEUE (task queue) or CUSTOM. ${LATE_INITIALIZED} It cannot be removed.`,
      ),
    webhook: z
      .string()
      .max(2048)
      .regex(/^https?:\/\/.*/)
      .optional()
      .describe(
        `http(s) URL that receives task results (QUEUE mode), at most 2048 characters. ${LATE_INITIALIZED} It cannot be removed.`,
      ),
    stopped: z
      .boolean()
      .optional()
      .describe(
        'Stop the endpoint (no workers run) when true; start it when false. A new endpoint starts. ' +
          `${LATE_INITIALIZED} Removing it starts the endpoint.`,
      ),
    ...managedSpecShape,
    ignoreDrift: ignoreDriftSchema(KIND, LATE_INITIALIZED_FIELDS),
  })
  .describe(
    'Desired state of a serverless endpoint: the fields of the cloud create-endpoint request, plus ' +
      'stopped, managementPolicies and deletionPolicy. Every field can change: the operator updates the ' +
      'endpoint in place. The cloud update is a partial PATCH, so a removed field is cleared where a value ' +
      'clears it (imageRegistry and initializationCommand to "", the minimums to 0) and refused at ' +
      'admission where none does.',
  );

// The update request has no way to clear these: a PATCH leaves out what it does not name, and the
// values that would mean "none" are refused (webhook's pattern refuses "", ids start at 1).
const IRREMOVABLE = {
  credentialId:
    'the cloud API has no way to clear a registry credential; set another, or recreate the endpoint',
  containerVolumeInGb: 'the cloud API has no way to unset the volume size; set a size instead',
  expose: 'the cloud API has no way to clear the exposed port; set another port instead',
  serviceMode: 'the cloud API has no way to unset the service mode; set ALB, QUEUE or CUSTOM',
  webhook:
    'the cloud API has no way to clear a webhook (its update is a partial PATCH, and an empty URL is refused); set another URL, or recreate the endpoint',
};

export const ServerlessEndpointSpecSchema = withRules(ServerlessEndpointSpecObject, [
  ...irremovable(IRREMOVABLE),
  {
    rule: '!has(oldSelf.workers) || has(self.workers) || has(self.autoscaling)',
    message:
      'workers cannot be removed: set the number of workers instead (0 is allowed), or add autoscaling',
    fieldPath: '.workers',
  },
  {
    rule: '!(has(self.autoscaling) && has(self.workers))',
    message:
      'autoscaling sets the workers itself: remove spec.workers (kubectl scale and an HPA cannot scale an autoscaled endpoint)',
    fieldPath: '.workers',
  },
  {
    rule: "!has(self.autoscaling) || (has(self.serviceMode) && self.serviceMode == 'QUEUE')",
    message: 'autoscaling scales on the task queue: set serviceMode: QUEUE',
    fieldPath: '.autoscaling',
  },
]);

export const ServerlessEndpointStatusSchema = z
  .object({
    ...baseStatusShape,
    name: z.string().optional().describe('Name of the endpoint in the cloud now.'),
    domain: z.string().optional().describe('Domain that serves the endpoint.'),
    totalWorkers: z.int().optional().describe('Number of workers the cloud has for the endpoint.'),
    runningWorkers: z.int().optional().describe('Number of workers running now.'),
    replicas: z
      .int()
      .min(0)
      .optional()
      .describe('Number of workers, as the scale subresource reports it (kubectl get --subresource=scale).'),
    autoscaling: z
      .object({
        desiredWorkers: z.int().min(0).describe('Workers the autoscaler wants now.'),
        reason: z
          .string()
          .describe(
            'Why: ScaleUp, ScaleDown, ScaleDownDelayed (within scaleDownDelaySeconds of a higher ' +
              'recommendation), Steady (within the 10% tolerance), AtMinimum, AtMaximum or AboveMaximum.',
          ),
        queue: z
          .int()
          .min(0)
          .describe('Tasks in flight (processing and delivered) the decision was made on.'),
      })
      .optional()
      .describe("The queue autoscaler's last decision, when spec.autoscaling is set."),
    selector: z
      .string()
      .optional()
      .describe(
        'A label selector that names this endpoint (gpucloud.io/endpoint-id=<id>), as the scale subresource ' +
          'reports it: an HPA refuses a scale target without one (SelectorRequired), even for External metrics.',
      ),
    perHourPrice: z.string().optional().describe('Price per hour of the endpoint, as the cloud gives it.'),
    perSecondPrice: z
      .string()
      .optional()
      .describe('Price per second of the endpoint, as the cloud gives it.'),
    cost: z.string().optional().describe('Cost of the endpoint so far, as the cloud gives it.'),
    tasks: z
      .object({
        processing: z.int().min(0).optional().describe('Tasks waiting for or being handed to a worker.'),
        delivered: z.int().min(0).optional().describe('Tasks handed to a worker and not finished yet.'),
        success: z.int().min(0).optional().describe('Tasks that succeeded.'),
        failed: z.int().min(0).optional().describe('Tasks that failed.'),
      })
      .optional()
      .describe('Number of tasks in each status (QUEUE mode).'),
  })
  .describe('Observed state of the serverless endpoint, as the operator last read it from the cloud.');

export type ServerlessEndpointSpec = z.output<typeof ServerlessEndpointSpecSchema>;
export type ServerlessEndpointStatus = z.output<typeof ServerlessEndpointStatusSchema>;

export const serverlessEndpointKind = defineKind({
  kind: KIND,
  plural: 'serverlessendpoints',
  shortNames: ['sle'],
  description:
    'A serverless endpoint of the GPU cloud: a scalable group of workers running one container image.',
  spec: ServerlessEndpointSpecSchema,
  status: ServerlessEndpointStatusSchema,
  rules: [
    {
      rule: `has(self.spec.name) || self.metadata.name.matches('${ENDPOINT_NAME_PATTERN}')`,
      message: `spec.name is required when metadata.name is not a valid endpoint name (${ENDPOINT_NAME_RULE})`,
      fieldPath: '.spec.name',
      reason: 'FieldValueRequired',
    },
    providerConfigRefRule,
  ],
  columns: [
    { name: 'GPU Type', type: 'string', jsonPath: '.spec.resources[0].gpuType', description: 'GPU model.' },
    {
      name: 'GPU Count',
      type: 'integer',
      jsonPath: '.spec.resources[0].gpuCount',
      description: 'GPUs per worker.',
    },
    {
      name: 'Region',
      type: 'string',
      jsonPath: '.spec.resources[0].region',
      description: 'Region of the workers.',
    },
    {
      name: 'Workers',
      type: 'integer',
      jsonPath: '.spec.workers',
      description: 'Desired number of workers.',
    },
    {
      name: 'Running',
      type: 'integer',
      jsonPath: '.status.runningWorkers',
      description: 'Workers running now.',
    },
    {
      name: 'Mode',
      type: 'string',
      jsonPath: '.spec.serviceMode',
      description: 'Service mode.',
      priority: 1,
    },
    {
      name: 'Domain',
      type: 'string',
      jsonPath: '.status.domain',
      description: 'Domain of the endpoint.',
      priority: 1,
    },
  ],
  scale: {
    specReplicasPath: '.spec.workers',
    statusReplicasPath: '.status.replicas',
    labelSelectorPath: '.status.selector',
  },
});
