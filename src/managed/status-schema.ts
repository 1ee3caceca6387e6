import { z } from 'zod';
import { listMap } from '../kube/schema-meta.ts';

// The status every kind shares. Every field is optional: the operator fills the status as it learns.

/** The shape of metav1.Condition, with the apiserver's own limits. */
export const conditionSchema = z
  .object({
    type: z
      .string()
      .min(1)
      .max(316)
      .regex(
        /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$/,
      )
      .describe('Type of the condition: Ready or Synced.'),
    status: z.enum(['True', 'False', 'Unknown']).describe('Status of the condition: True, False or Unknown.'),
    observedGeneration: z
      .int()
      .min(0)
      .optional()
      .describe('metadata.generation of the object when the condition was set.'),
    lastTransitionTime: z.iso.datetime().describe('When the condition last changed status.'),
    reason: z
      .string()
      .min(1)
      .max(1024)
      .regex(/^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/)
      .describe('Machine-readable CamelCase reason for the last transition; stable for a given cause.'),
    message: z.string().max(32768).describe('Human-readable details of the last transition.'),
  })
  .describe('An observation of one aspect of the object, in the standard Kubernetes condition shape.');

export type Condition = z.output<typeof conditionSchema>;

export const baseStatusShape = {
  id: z.string().optional().describe('Id of the cloud resource, as a string.'),
  phase: z
    .string()
    .optional()
    .describe(
      'Status of the cloud resource as the cloud reports it, e.g. RUNNING; unknown values are kept as-is.',
    ),
  conditions: listMap(z.array(conditionSchema).max(16), ['type'])
    .optional()
    .describe(
      'Ready: the cloud resource exists and matches the spec. Synced: the last reconcile succeeded; ' +
        'when False its reason and message carry the cloud error.',
    ),
  observedGeneration: z
    .int()
    .min(0)
    .optional()
    .describe('metadata.generation of the spec the operator last acted on.'),
  lastSyncTime: z.iso.datetime().optional().describe('When the operator last read the cloud resource.'),
  lateInitialized: z
    .array(z.string())
    .max(32)
    .optional()
    .describe(
      'Spec fields the operator filled from the cloud when the resource was created or adopted. Present ' +
        'once that has run, so a field removed later is never filled again.',
    ),
  cloudFingerprint: z
    .string()
    .max(64)
    .optional()
    .describe(
      'Digest of the watched cloud fields this status was written from: while the cloud list shows the ' +
        'same, a restarted operator trusts this status instead of reading the object again.',
    ),
};

/** The status of kinds that rent spot capacity. */
export const spotStatusShape = {
  preemptions: z.int().min(0).optional().describe("Times the cloud took this resource's spot capacity back."),
  lastPreemptionTime: z.iso.datetime().optional().describe('When the last preemption was seen.'),
};

/** The status of kinds whose objects finish (tasks), as a Job's does. */
export const finiteStatusShape = {
  completionTime: z.iso
    .datetime()
    .optional()
    .describe('When the operator saw the object finish; ttlSecondsAfterFinished counts from here.'),
};

/** Any kind's status as the generic reconciler reads it: the shared fields typed, the kind's own kept as they are. */
export const managedStatusSchema = z.looseObject(baseStatusShape);
export type ManagedStatus = z.output<typeof managedStatusSchema>;
