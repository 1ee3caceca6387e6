import { z } from 'zod';
import { anyJson, withRules } from '../../kube/schema-meta.ts';
import { baseStatusShape, finiteStatusShape } from '../../managed/core/status-schema.ts';
import { immutableExcept } from '../common/immutability.ts';
import { defineKind } from '../common/kind.ts';
import { dnsSubdomainSchema, providerConfigRefRule, providerConfigRefSchema } from '../common/schema.ts';

const KIND = 'ServerlessTask';

/** Output larger than this (as JSON, in bytes) stays out of status; `gpucloud tasks get` reads it whole. */
export const OUTPUT_CAP_BYTES = 16_384;

const secretKeySelectorSchema = z
  .object({
    name: dnsSubdomainSchema.describe('Name of the Secret, in the namespace of the task.'),
    key: z.string().min(1).max(253).describe('Key in the Secret whose value is sent.'),
  })
  .describe('A key of a Secret in the namespace of the task.');

const { shape, rules } = immutableExcept(
  KIND,
  {
    endpointRef: z
      .object({
        name: dnsSubdomainSchema.describe('Name of the ServerlessEndpoint, in the namespace of the task.'),
      })
      .describe(
        'The QUEUE-mode ServerlessEndpoint that runs the task, in the namespace of the task. The task waits ' +
          'while the endpoint does not exist, has no cloud id yet or is stopped.',
      ),
    input: anyJson(z.record(z.string(), z.unknown()))
      .optional()
      .describe('Input of the task: a JSON object of any shape, sent to the worker as it is.'),
    workerPort: z.int32().min(1).max(65535).optional().describe('Port on the worker the task is sent to.'),
    processUri: z
      .string()
      .min(1)
      .max(2048)
      .regex(/^\//)
      .optional()
      .describe('Path on the worker that processes the task, starting with /.'),
    webhook: z
      .string()
      .max(2048)
      .regex(/^https?:\/\/.*/)
      .optional()
      .describe("http(s) URL the cloud posts the task's result to; the endpoint's webhook when unset."),
    webhookAuthKeySecretRef: secretKeySelectorSchema
      .optional()
      .describe('The Secret key whose value the cloud sends to the webhook as header X-API-Key.'),
    ttlSecondsAfterFinished: z
      .int32()
      .min(0)
      .optional()
      .describe(
        'Seconds after the task finished (Complete or Failed) before the operator deletes this resource, ' +
          'as for a Job; kept until deleted by hand when unset.',
      ),
    providerConfigRef: providerConfigRefSchema,
  },
  ['ttlSecondsAfterFinished'],
);

export const ServerlessTaskSpecSchema = withRules(
  z
    .object(shape)
    .describe(
      'A task submitted once to a QUEUE-mode serverless endpoint, as a Job runs once: its cloud task id is ' +
        "derived from this resource's uid, so a crash or a retry can never submit it twice. Every field but " +
        "ttlSecondsAfterFinished is immutable. providerConfigRef must name the endpoint's account.",
    ),
  rules,
);

export const ServerlessTaskStatusSchema = z
  .object({
    ...baseStatusShape,
    ...finiteStatusShape,
    taskId: z
      .string()
      .optional()
      .describe('Id of the task in the cloud: the uid of this resource, without hyphens.'),
    endpointId: z.string().optional().describe('Id of the endpoint in the cloud.'),
    endpointName: z.string().optional().describe('Name of the endpoint in the cloud.'),
    deliveryStatus: z
      .string()
      .optional()
      .describe('Delivery of the result to the webhook: INIT, SUCCESS, FAILED or MAX_RETRIES_EXCEEDED.'),
    deliveryAttempts: z.int().min(0).optional().describe('Times the cloud tried to deliver the result.'),
    error: z.string().optional().describe('Why the task failed, as the cloud reports it.'),
    output: anyJson(z.unknown())
      .optional()
      .describe(
        `Output of the task once it finished, when it is at most ${OUTPUT_CAP_BYTES} bytes as JSON; ` +
          'see outputTruncated.',
      ),
    outputTruncated: z
      .boolean()
      .optional()
      .describe(
        `True when the output is larger than ${OUTPUT_CAP_BYTES} bytes and left out of status: ` +
          '`gpucloud tasks get serverlesstask/<name>` prints it whole.',
      ),
    outputBytes: z.int().min(0).optional().describe('Size of the output as JSON, in bytes.'),
    createdAt: z.iso.datetime().optional().describe('When the cloud accepted the task.'),
    updatedAt: z.iso.datetime().optional().describe('When the cloud last changed the task.'),
    deliveredAt: z.iso.datetime().optional().describe('When the task was handed to a worker.'),
  })
  .describe('Observed state of the task, as the operator last read it from the cloud.');

export type ServerlessTaskSpec = z.output<typeof ServerlessTaskSpecSchema>;
export type ServerlessTaskStatus = z.output<typeof ServerlessTaskStatusSchema>;

export const serverlessTaskKind = defineKind({
  kind: KIND,
  plural: 'serverlesstasks',
  shortNames: ['slt'],
  description:
    'A task run once on a QUEUE-mode serverless endpoint, declared as a Job is: it ends Complete or Failed.',
  spec: ServerlessTaskSpecSchema,
  status: ServerlessTaskStatusSchema,
  rules: [providerConfigRefRule],
  finite: true,
  columns: [
    { name: 'Endpoint', type: 'string', jsonPath: '.spec.endpointRef.name', description: 'The endpoint.' },
    {
      name: 'Delivery',
      type: 'string',
      jsonPath: '.status.deliveryStatus',
      description: 'Delivery of the result to the webhook.',
    },
    {
      name: 'Complete',
      type: 'string',
      jsonPath: '.status.conditions[?(@.type=="Complete")].status',
      description: 'Whether the task succeeded.',
    },
    {
      name: 'Task ID',
      type: 'string',
      jsonPath: '.status.taskId',
      description: 'Id of the task in the cloud.',
      priority: 1,
    },
  ],
});
