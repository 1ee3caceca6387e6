import { z } from 'zod';
import { listMap, withRules } from '../../kube/schema-meta.ts';
import {
  baseStatusShape,
  deadlineStatusShape,
  pauseStatusShape,
  placementStatusShape,
  spotStatusShape,
} from '../../managed/core/status-schema.ts';
import { immutableExcept } from '../common/immutability.ts';
import { defineKind } from '../common/kind.ts';
import {
  activeDeadlineSecondsSchema,
  cloudIdSchema,
  environmentVariablesSchema,
  exposedPortSchema,
  gpuTypeSchema,
  ignoreDriftSchema,
  imageRegistrySchema,
  imageSchema,
  initializationCommandSchema,
  LATE_INITIALIZED,
  listedNeedsTypesRule,
  MANAGED_SPEC_FIELDS,
  managedSpecShape,
  mountPathSchema,
  placementShape,
  providerConfigRefRule,
  recoveryNeedsCreateAndDeleteRule,
  recoveryNeedsSpotRule,
  recoveryPolicySchema,
  regionSchema,
  secretRotationNeedsCreateAndDeleteRule,
  secretRotationPolicySchema,
  sizeSchema,
} from '../common/schema.ts';

const KIND = 'GpuPod';

/** What `ignoreDrift` may list: the fields late initialisation fills or drift reports, but the GPUs. */
const IGNORABLE = ['paused', 'name', 'isSpot', 'image', 'imageRegistry', 'containerVolumeInGb', 'regions'];

// CEL has no bitwise operators: list the int32 powers of two instead.
const POWERS_OF_TWO = Array.from({ length: 31 }, (_, exponent) => 2 ** exponent);

const placementSchema = withRules(z.object(placementShape), [listedNeedsTypesRule]).describe(
  'Where the operator may place the pod.',
);

const volumeSchema = z
  .object({
    id: z.string().min(1).max(128).describe('Id of the persistent volume in the cloud.'),
    mountPath: mountPathSchema.describe('Absolute path inside the container where the volume is mounted.'),
  })
  .describe('A persistent volume mounted into the pod.');

/** The spec fields a user may change once the pod exists; every other one is immutable. */
export const GPU_POD_MUTABLE_FIELDS = [
  'paused',
  'placement',
  'ignoreDrift',
  'secretRotationPolicy',
  'recoveryPolicy',
  'activeDeadlineSeconds',
  'deadlineAction',
  'idleStop',
  'pauseOnBudget',
  ...MANAGED_SPEC_FIELDS,
] as const;

// Mirrors the v2 pod create request, without callbackUrl: the operator owns the pod's callback URL
// (it turns lifecycle callbacks into immediate re-reads of the pod).
const { shape, rules: immutabilityRules } = immutableExcept(
  KIND,
  {
    name: z
      .string()
      .min(1)
      .max(255)
      .optional()
      .describe(
        `Name of the pod in the cloud, 1 to 255 characters; metadata.name for a new pod. ${LATE_INITIALIZED}`,
      ),
    regions: z
      .array(regionSchema)
      .max(64)
      .optional()
      .describe('Region codes the pod may be placed in. Any region when omitted.'),
    image: imageSchema.describe('Container image name, 1 to 255 characters.'),
    imageRegistry: imageRegistrySchema
      .optional()
      .describe('URL of the image registry, at most 255 characters.'),
    imagePublicType: z
      .enum(['PUBLIC', 'PRIVATE'])
      .optional()
      .describe('Whether the image is public (PUBLIC) or needs registry credentials (PRIVATE).'),
    containerRegistryAuthId: cloudIdSchema
      .optional()
      .describe('Id of the registry credential in the cloud, for a private image.'),
    resourceType: z.enum(['GPU', 'CPU']).optional().describe('Kind of machine: GPU or CPU.'),
    gpuType: gpuTypeSchema
      .optional()
      .describe(
        'GPU model, as named by the GPU machine spec search. Set exactly one of gpuType and placement: ' +
          'gpuType names the one model; placement lets the operator choose.',
      ),
    placement: placementSchema
      .optional()
      .describe(
        'Lets the operator choose the GPU type, region and spot or on-demand: the cheapest available offer ' +
          'that satisfies the spec, recorded in status.placement before the create; a create refused for ' +
          'lack of room moves to the next offer. Set exactly one of gpuType and placement, and neither ' +
          'isSpot nor maxPrice with it. It can change at any time: a change affects only the next placement ' +
          '(a replacement after a preemption), never a running pod.',
      ),
    gpuCount: withRules(z.int32().min(1), [
      {
        rule: `self in [${POWERS_OF_TWO.join(', ')}]`,
        message: 'gpuCount must be a power of 2 (1, 2, 4, 8, ...)',
      },
    ]).describe('Number of GPUs: a power of 2.'),
    isSpot: z
      .boolean()
      .optional()
      .describe(
        `Rent spot capacity: cheaper, but the cloud may preempt the pod. On-demand for a new pod when omitted. ${LATE_INITIALIZED}`,
      ),
    maxPrice: z
      .number()
      .positive()
      .optional()
      .describe('Highest hourly price accepted for the whole machine, in USD. Only with isSpot: true.'),
    shmInGb: sizeSchema.optional().describe('Shared memory (/dev/shm), in GB.'),
    minSingleCardRamInGb: sizeSchema.optional().describe('Minimum RAM per GPU card, in GB.'),
    minSingleCardVramInGb: sizeSchema.optional().describe('Minimum video memory per GPU card, in GB.'),
    minSingleCardVcpu: sizeSchema.optional().describe('Minimum vCPUs per GPU card.'),
    containerVolumeInGb: sizeSchema.optional().describe('Size of the container volume, in GB.'),
    initializationCommand: initializationCommandSchema
      .optional()
      .describe('Command run when the container starts, at most 8192 characters.'),
    environmentVars: environmentVariablesSchema('pod', ['POD_ID'])
      .optional()
      .describe(
        'Environment variables of the container. POD_ID (set by the cloud) and names starting with ' +
          'GPUCLOUD_ (set by the operator) are reserved.',
      ),
    expose: listMap(z.array(exposedPortSchema('HTTP')).max(32), ['port'])
      .optional()
      .describe('Container ports to make reachable; their URLs appear in status.exposedPorts.'),
    volumes: listMap(z.array(volumeSchema).max(32), ['mountPath'])
      .optional()
      .describe('Persistent volumes to mount.'),
    paused: z
      .boolean()
      .optional()
      .describe(
        'Pause the pod (stops the GPU billing, keeps the pod) when true; resume it when false. A new pod ' +
          `starts running. ${LATE_INITIALIZED} Removing it afterwards resumes the pod.`,
      ),
    recoveryPolicy: recoveryPolicySchema,
    secretRotationPolicy: secretRotationPolicySchema,
    activeDeadlineSeconds: activeDeadlineSecondsSchema,
    deadlineAction: z
      .enum(['Pause', 'Delete'])
      .optional()
      .describe(
        'What happens when activeDeadlineSeconds passes: Pause (the default) holds the pod paused, its volume ' +
          'kept, until its user changes the spec or sets annotation gpucloud.io/resume; Delete deletes the ' +
          'cloud pod and finishes the resource (Failed, DeadlineExceeded): it is never created again.',
      ),
    idleStop: z
      .object({
        gpuUtilizationBelowPercent: z
          .number()
          .min(0)
          .max(100)
          .describe('The pod is idle while every GPU stays below this utilisation, in percent.'),
        forMinutes: z
          .int()
          .min(5)
          .max(180)
          .describe(
            'For this long, 5 to 180 minutes (the metrics API serves at most 3 hours at a 30 s step): every ' +
              'sample of the window must be below, and the window must be covered by samples of the pod ' +
              'running; a pod younger than the window, or with samples missing, is not idle.',
          ),
      })
      .optional()
      .describe(
        'Pause the pod when its GPUs stay idle: the operator holds it paused (status.pausedBy, reason Idle), ' +
          'its volume kept, without touching spec.paused, until its user changes the spec or sets ' +
          'annotation gpucloud.io/resume. Checked on a budget of its own (--idle-check-rps).',
      ),
    pauseOnBudget: z
      .boolean()
      .optional()
      .describe(
        'Lets the operator pause this pod when a budget of its account with onExceeded: PausePods is over ' +
          'its limit (status.pausedBy, reason BudgetExceeded), the idlest pods first; it resumes when its ' +
          'user changes the spec or sets annotation gpucloud.io/resume. Never paused for a budget when unset.',
      ),
    ...managedSpecShape,
    ignoreDrift: ignoreDriftSchema(KIND, IGNORABLE),
  },
  GPU_POD_MUTABLE_FIELDS,
  ['name', 'isSpot'],
);

export const GpuPodSpecSchema = withRules(
  z
    .object(shape)
    .describe(
      'Desired state of a GPU pod: the fields of the cloud create-pod request, plus paused, the policies ' +
        'and deletionPolicy. The operator sets the callback URL itself, so it is not a field here. Fields ' +
        'marked so are late-initialised: filled from the cloud when left out, once, at creation or ' +
        'adoption, so adopting a pod never changes it. The pod can change only paused: a difference in ' +
        'name, image, imageRegistry, gpuType, gpuCount, isSpot, containerVolumeInGb or regions (for a placed ' +
        'pod: the placed type and spot choice) is reported as Synced=False, reason Drifted.',
    ),
  [
    {
      rule: '!has(self.maxPrice) || (has(self.isSpot) && self.isSpot)',
      message: 'maxPrice is only valid for spot pods: set isSpot: true or remove maxPrice',
      fieldPath: '.maxPrice',
    },
    {
      rule: 'has(self.gpuType) != has(self.placement)',
      message:
        'set exactly one of gpuType (one GPU model) and placement (the operator chooses among several)',
    },
    {
      rule: '!has(self.placement) || (!has(self.isSpot) && !has(self.maxPrice))',
      message:
        'with placement, spot and the price cap are placement.spot and placement.maxPricePerGpuHour: remove isSpot and maxPrice',
      fieldPath: '.placement',
    },
    {
      rule: "!has(self.placement) || !has(self.resourceType) || self.resourceType == 'GPU'",
      message: 'placement chooses among GPU machines: a CPU pod names gpuType',
      fieldPath: '.placement',
    },
    {
      rule: '!has(self.placement) || has(self.placement.gpuTypes) || has(self.minSingleCardVramInGb)',
      message:
        'say which GPUs fit: placement.gpuTypes, or minSingleCardVramInGb for any model with that much memory',
      fieldPath: '.placement',
    },
    recoveryNeedsSpotRule,
    recoveryNeedsCreateAndDeleteRule,
    secretRotationNeedsCreateAndDeleteRule,
    ...immutabilityRules,
  ],
);

const gpuMetricsSchema = z
  .object({
    index: z.int().min(0).describe('Index of the GPU in the pod, as the cloud numbers it (gpu_show_index).'),
    utilizationPercent: z.number().optional().describe('SM utilisation of the GPU, 0 to 100.'),
    memoryUsedBytes: z.int().optional().describe('Video memory in use, in bytes.'),
    memoryTotalBytes: z.int().optional().describe('Video memory of the GPU, in bytes.'),
  })
  .describe('Latest samples of one GPU.');

export const GpuPodStatusSchema = z
  .object({
    ...baseStatusShape,
    ...spotStatusShape,
    ...pauseStatusShape,
    ...deadlineStatusShape,
    ...placementStatusShape,
    gpuType: z.string().optional().describe('GPU model the pod runs on, as the cloud reports it.'),
    region: z.string().optional().describe('Region code the cloud placed the pod in.'),
    gpuDisplayName: z.string().optional().describe('Display name of the GPU model.'),
    cloudType: z
      .string()
      .optional()
      .describe('Kind of capacity the pod runs on, as the cloud names it (SECURE, COMMUNITY).'),
    createdAt: z.iso.datetime().optional().describe('When the cloud created the pod.'),
    sshCommand: z.string().optional().describe('Command to open an SSH session to the pod.'),
    internalIp: z.string().optional().describe('IP address of the pod inside the cloud network.'),
    exposedPorts: listMap(
      z.array(
        z
          .object({
            port: z.int().describe('Container port.'),
            protocol: z.string().optional().describe('Protocol served on the port.'),
            ingressUrl: z.string().optional().describe('URL that reaches the port from outside.'),
            healthy: z.boolean().optional().describe('Whether the cloud ingress sees the port as healthy.'),
            proxyPort: z
              .int()
              .optional()
              .describe('Port on the ingress host that forwards to the container port.'),
            host: z.string().optional().describe('Ingress host that serves the port.'),
            serviceName: z.string().optional().describe('Name of the cloud service behind the port.'),
          })
          .describe('One exposed port.'),
      ),
      ['port'],
    )
      .optional()
      .describe('The exposed ports and their ingress URLs.'),
    prices: z
      .object({
        singleCard: z
          .string()
          .optional()
          .describe('Price of one GPU card (singleCardPrice), as the cloud gives it.'),
        containerVolume: z
          .string()
          .optional()
          .describe('Price of the container volume (containerVolumePrice), as the cloud gives it.'),
        persistentVolume: z
          .string()
          .optional()
          .describe('Price of the persistent volumes (persistentVolumePrice), as the cloud gives it.'),
      })
      .optional()
      .describe('Prices the cloud quotes for the pod, in USD.'),
    runningSeconds: z.int().min(0).optional().describe('Billed running time of the pod so far, in seconds.'),
    estimatedCost: z
      .string()
      .optional()
      .describe('Estimated cost so far in USD, from the running time and the prices, e.g. "1.2345".'),
    metrics: z
      .object({
        sampledAt: z.iso.datetime().optional().describe('When the latest samples were taken.'),
        cpuUsage: z.number().optional().describe('CPU usage as a ratio of the requested cores: 1.0 is 100%.'),
        memoryUsedBytes: z.int().optional().describe('Memory in use, in bytes.'),
        memoryTotalBytes: z.int().optional().describe('Memory of the pod, in bytes.'),
        gpus: listMap(z.array(gpuMetricsSchema), ['index'])
          .optional()
          .describe('Latest samples of each GPU.'),
        storageUsedBytes: z.int().optional().describe('Container volume space in use, in bytes.'),
        storageTotalBytes: z.int().optional().describe('Size of the container volume, in bytes.'),
      })
      .optional()
      .describe('Latest resource usage of the pod, refreshed on a slower schedule than the phase.'),
  })
  .describe('Observed state of the GPU pod, as the operator last read it from the cloud.');

export type GpuPodSpec = z.output<typeof GpuPodSpecSchema>;
export type GpuPodStatus = z.output<typeof GpuPodStatusSchema>;

export const gpuPodKind = defineKind({
  kind: KIND,
  plural: 'gpupods',
  shortNames: ['gpod'],
  description:
    'A container pod on rented GPU (or CPU) capacity in the GPU cloud, kept in the state its spec declares.',
  spec: GpuPodSpecSchema,
  status: GpuPodStatusSchema,
  rules: [providerConfigRefRule],
  columns: [
    {
      name: 'GPU Type',
      type: 'string',
      jsonPath: '.status.gpuType',
      description: 'GPU model the pod runs on (the placed one, for a placed pod).',
    },
    { name: 'GPU Count', type: 'integer', jsonPath: '.spec.gpuCount', description: 'Number of GPUs.' },
    { name: 'Region', type: 'string', jsonPath: '.status.region', description: 'Region the pod runs in.' },
    {
      name: 'Price',
      type: 'string',
      jsonPath: '.status.prices.singleCard',
      description: 'Price per GPU-hour in USD the cloud charges the pod.',
    },
    {
      name: 'Paused By',
      type: 'string',
      jsonPath: '.status.pausedBy.reason',
      description: 'Why the operator holds the pod paused (Idle, DeadlineExceeded, BudgetExceeded).',
    },
    {
      name: 'Deadline',
      type: 'string',
      jsonPath: '.status.deadlineTime',
      description: 'When activeDeadlineSeconds passes.',
    },
  ],
});
