import { z } from 'zod';
import { withRules } from '../../kube/schema-meta.ts';
import {
  baseStatusShape,
  deadlineStatusShape,
  placementStatusShape,
  spotStatusShape,
} from '../../managed/core/status-schema.ts';
import { immutableExcept } from '../common/immutability.ts';
import { defineKind } from '../common/kind.ts';
import {
  activeDeadlineSecondsSchema,
  ignoreDriftSchema,
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
} from '../common/schema.ts';

const KIND = 'GpuVm';

const placementSchema = withRules(
  z.object({
    ...placementShape,
    gpuCount: z
      .int32()
      .min(1)
      .max(64)
      .describe('GPUs of the VM: VM types of this many GPUs are chosen from.'),
    minGpuMemoryInGb: z
      .int32()
      .min(1)
      .optional()
      .describe('Any GPU model with at least this much memory per GPU, in GB, when gpuTypes is omitted.'),
    regions: z
      .array(regionSchema)
      .min(1)
      .max(64)
      .optional()
      .describe('Regions the VM may be placed in; any when omitted.'),
  }),
  [
    listedNeedsTypesRule,
    {
      rule: 'has(self.gpuTypes) || has(self.minGpuMemoryInGb)',
      message: 'say which GPUs fit: gpuTypes, or minGpuMemoryInGb for any model with that much memory',
    },
  ],
).describe('Where the operator may place the VM.');

// Mirrors the v2 VM create request; the name is the only field the cloud can change (PATCH).
const { shape, rules } = immutableExcept(
  KIND,
  {
    vmTypeId: z
      .int32()
      .min(1)
      .optional()
      .describe(
        'Id of the VM type to rent, from the VM types listing (GET /v2/vms/types). Set vmTypeId and region, ' +
          'or placement.',
      ),
    region: regionSchema
      .optional()
      .describe('Region code to create the VM in; the VM type must be offered there. Set with vmTypeId.'),
    placement: placementSchema
      .optional()
      .describe(
        'Lets the operator choose the VM type and region by price from the VM types listing: the cheapest ' +
          'available type of gpuCount GPUs of an acceptable model, recorded in status.placement before the ' +
          'create; a create refused for lack of room moves to the next. Instead of vmTypeId, region and ' +
          'isSpot. It can change at any time: a change affects only the next placement, never a running VM.',
      ),
    name: z
      .string()
      .min(1)
      .max(255)
      .optional()
      .describe(
        `Name (nickname) of the VM in the cloud, 1 to 255 characters; metadata.name for a new VM. ${LATE_INITIALIZED} Changing it renames the VM; removing it renames the VM to metadata.name.`,
      ),
    isSpot: z
      .boolean()
      .optional()
      .describe(
        'Rent spot capacity (cheaper, may be preempted) when true, on-demand capacity when false; ' +
          `on-demand for a new VM when omitted. ${LATE_INITIALIZED}`,
      ),
    volumeMountPaths: z
      .record(z.string(), mountPathSchema)
      .optional()
      .describe(
        'Mount path of each volume, keyed by volume id. The cloud uses a default path for a volume not listed.',
      ),
    recoveryPolicy: recoveryPolicySchema,
    activeDeadlineSeconds: activeDeadlineSecondsSchema,
    deadlineAction: z
      .enum(['Delete'])
      .optional()
      .describe(
        'What happens when activeDeadlineSeconds passes; required with it, since a VM cannot be paused: ' +
          'Delete deletes the cloud VM and finishes the resource (Failed, DeadlineExceeded); it is never ' +
          'created again.',
      ),
    ...managedSpecShape,
    ignoreDrift: ignoreDriftSchema(KIND, ['name', 'isSpot', 'region']),
  },
  [
    'name',
    'placement',
    'recoveryPolicy',
    'activeDeadlineSeconds',
    'deadlineAction',
    'ignoreDrift',
    ...MANAGED_SPEC_FIELDS,
  ],
  ['isSpot'],
);

export const GpuVmSpecSchema = withRules(
  z
    .object(shape)
    .describe(
      'Desired state of a GPU VM: the fields of the cloud create-VM request, plus the policies and ' +
        'deletionPolicy. The VM can change only its name: a difference in region or isSpot is reported ' +
        'as Synced=False, reason Drifted (the VM object does not report its vmTypeId).',
    ),
  [
    {
      rule: 'has(self.placement) ? !has(self.vmTypeId) && !has(self.region) && !has(self.isSpot) : has(self.vmTypeId) && has(self.region)',
      message:
        'set vmTypeId and region (one VM type), or placement (the operator chooses) without vmTypeId, region or isSpot',
    },
    recoveryNeedsSpotRule,
    recoveryNeedsCreateAndDeleteRule,
    {
      rule: '!has(self.activeDeadlineSeconds) || has(self.deadlineAction)',
      message: 'a VM cannot be paused: with activeDeadlineSeconds, say deadlineAction: Delete',
      fieldPath: '.deadlineAction',
    },
    ...rules,
  ],
);

export const GpuVmStatusSchema = z
  .object({
    ...baseStatusShape,
    ...spotStatusShape,
    ...deadlineStatusShape,
    ...placementStatusShape,
    name: z.string().optional().describe('Name of the VM in the cloud now.'),
    region: z.string().optional().describe('Region the VM runs in.'),
    gpuType: z.string().optional().describe('GPU model of the VM.'),
    gpuDisplayName: z.string().optional().describe('Display name of the GPU model.'),
    gpuCount: z.int().optional().describe('Number of GPUs of the VM.'),
    gpuMemoryInGb: z.string().optional().describe('Video memory of one GPU, in GB, as the cloud gives it.'),
    cpuCores: z.int().optional().describe('Number of CPU cores.'),
    memoryInGb: z.string().optional().describe('Memory, in GB, as the cloud gives it.'),
    storageInGb: z.string().optional().describe('Storage, in GB, as the cloud gives it.'),
    osInfo: z.string().optional().describe('Operating system of the VM.'),
    isSpot: z.boolean().optional().describe('Whether the VM runs on spot capacity.'),
    ipAddress: z.string().optional().describe('Public IP address of the VM.'),
    domainName: z.string().optional().describe('Domain name of the VM.'),
    sshTemplate: z.string().optional().describe('Template of the SSH command that connects to the VM.'),
    notebookUrl: z.string().optional().describe('URL of the Jupyter notebook served by the VM.'),
    pricePerHour: z
      .string()
      .optional()
      .describe(
        'Hourly price of the VM type (its spot price for a spot VM), as the VM types listing gives it.',
      ),
    currency: z.string().optional().describe('Currency of the prices, as the cloud names it.'),
    estimatedCost: z
      .string()
      .optional()
      .describe(
        'Estimated cost since the VM was created, from its hourly price, e.g. "1.2345". The VM API reports ' +
          'no billed running time, so stopped hours count too: an upper bound.',
      ),
  })
  .describe('Observed state of the GPU VM, as the operator last read it from the cloud.');

export type GpuVmSpec = z.output<typeof GpuVmSpecSchema>;
export type GpuVmStatus = z.output<typeof GpuVmStatusSchema>;

export const gpuVmKind = defineKind({
  kind: KIND,
  plural: 'gpuvms',
  shortNames: ['gvm'],
  description: 'A virtual machine with GPUs rented from the GPU cloud, kept in the state its spec declares.',
  spec: GpuVmSpecSchema,
  status: GpuVmStatusSchema,
  rules: [providerConfigRefRule],
  columns: [
    { name: 'GPU Type', type: 'string', jsonPath: '.status.gpuType', description: 'GPU model.' },
    { name: 'GPU Count', type: 'integer', jsonPath: '.status.gpuCount', description: 'Number of GPUs.' },
    { name: 'Region', type: 'string', jsonPath: '.status.region', description: 'Region the VM runs in.' },
    {
      name: 'Price',
      type: 'string',
      jsonPath: '.status.pricePerHour',
      description: 'Hourly price of the VM, from the VM types listing.',
    },
    {
      name: 'Deadline',
      type: 'string',
      jsonPath: '.status.deadlineTime',
      description: 'When activeDeadlineSeconds passes.',
    },
    {
      name: 'IP',
      type: 'string',
      jsonPath: '.status.ipAddress',
      description: 'Public IP address.',
      priority: 1,
    },
  ],
});
