import { z } from 'zod';
import { listMap } from '../../kube/schema-meta.ts';

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

/** Why the operator paused an object the user did not pause. */
export const PAUSE_REASONS = ['Idle', 'DeadlineExceeded', 'BudgetExceeded'] as const;

export const pausedBySchema = z
  .object({
    reason: z.enum(PAUSE_REASONS).describe('Idle, DeadlineExceeded or BudgetExceeded.'),
    message: z.string().max(1024).describe('What the operator saw, in words.'),
    since: z.iso.datetime().describe('When the operator paused it.'),
    generation: z.int().min(0).describe('metadata.generation when it was paused: a newer spec resumes it.'),
    resumeToken: z
      .string()
      .max(253)
      .optional()
      .describe('The gpucloud.io/resume annotation when it was paused: another value resumes it.'),
  })
  .describe(
    'Set while the operator holds the object paused though spec.paused does not ask it (idle, a deadline, ' +
      'a budget). It survives restarts, never changes the spec, and is lifted only by its user: a new ' +
      'generation of the spec, or a new value of the gpucloud.io/resume annotation (gpucloud resume).',
  );
export type PausedBy = z.output<typeof pausedBySchema>;

/** The status of kinds the operator may pause (pods). */
export const pauseStatusShape = { pausedBy: pausedBySchema.optional() };

/** The status of kinds with a deadline: when it counts from and when it passes; a deleted one finished. */
export const deadlineStatusShape = {
  startTime: z.iso
    .datetime()
    .optional()
    .describe(
      "When the resource's first cloud object was created, as the cloud says: activeDeadlineSeconds counts " +
        'from here, across restarts of the operator and replacements after preemption.',
    ),
  deadlineTime: z.iso
    .datetime()
    .optional()
    .describe('When activeDeadlineSeconds passes: startTime plus the deadline.'),
  ...finiteStatusShape,
};

const offerShape = {
  gpuType: z.string().max(128).describe('GPU model.'),
  region: z.string().max(64).describe('Region code.'),
  spot: z.boolean().describe('Spot capacity (true) or on-demand (false).'),
  pricePerGpuHour: z
    .string()
    .max(32)
    .describe('Price per GPU-hour in USD the GPU search quoted for it, e.g. "1.0900".'),
};

/** Why an offer was left for the next one. */
export const ATTEMPT_OUTCOMES = ['NoCapacity', 'FailedToStart', 'Preempted', 'AboveCap'] as const;

export const placementStatusSchema = z
  .object({
    ...offerShape,
    placedAt: z.iso.datetime().describe('When the operator chose it.'),
    chargedPerGpuHour: z
      .string()
      .max(32)
      .optional()
      .describe('Price per GPU-hour in USD the cloud charges the object made on it, once made.'),
    attempts: z
      .array(
        z
          .object({
            ...offerShape,
            outcome: z
              .enum(ATTEMPT_OUTCOMES)
              .describe(
                'NoCapacity: the cloud refused the create for lack of room; FailedToStart: the object failed before it ran; Preempted: the cloud took its spot capacity back; AboveCap: the cloud charged the object made on it more than maxPricePerGpuHour, so it was deleted at once.',
              ),
            at: z.iso.datetime().describe('When it was seen.'),
          })
          .describe('An offer tried and lost.'),
      )
      .max(16)
      .optional()
      .describe(
        "The offers tried and lost, oldest first (the last 16): those before this one, and this one's own loss once seen. Each rules its offer out, and counts against maxAttempts, until the offers are read again after it.",
      ),
  })
  .describe(
    'Where the operator placed the object, for a resource that leaves the choice to it (spec.placement): ' +
      'the cheapest available offer that satisfies the spec, chosen and recorded before the create. A ' +
      'running object is never moved; a replacement after a preemption or a failed start is placed again.',
  );
export type PlacementStatus = z.output<typeof placementStatusSchema>;

/** The status of kinds the operator may place (pods, VMs). */
export const placementStatusShape = { placement: placementStatusSchema.optional() };

/** Any kind's status as the generic reconciler reads it: the shared fields typed, the kind's own kept as they are. */
export const managedStatusSchema = z.looseObject({
  ...baseStatusShape,
  ...pauseStatusShape,
  ...placementStatusShape,
  startTime: deadlineStatusShape.startTime,
});
export type ManagedStatus = z.output<typeof managedStatusSchema>;
