// The parts of a Pod the virtual node reads to run it and writes back as its kubelet: loose, so that
// everything else the apiserver sends is kept as it is, and what the node does not support is seen (and
// refused) rather than dropped.
import { z } from 'zod';
import { objectMetaSchema } from '../kube/object.ts';

const quantitySchema = z.union([z.string(), z.number()]);
const resourceListSchema = z.record(z.string(), quantitySchema);

const keyRefSchema = z.looseObject({
  name: z.string().optional(),
  key: z.string(),
  optional: z.boolean().optional(),
});

export const envVarSchema = z.looseObject({
  name: z.string(),
  value: z.string().optional(),
  valueFrom: z
    .looseObject({
      secretKeyRef: keyRefSchema.optional(),
      configMapKeyRef: keyRefSchema.optional(),
      fieldRef: z.looseObject({ fieldPath: z.string() }).optional(),
      resourceFieldRef: z
        .looseObject({
          containerName: z.string().optional(),
          resource: z.string(),
          divisor: quantitySchema.optional(),
        })
        .optional(),
    })
    .optional(),
});
export type EnvVar = z.output<typeof envVarSchema>;

const sourceRefSchema = z.looseObject({ name: z.string().optional(), optional: z.boolean().optional() });

export const envFromSchema = z.looseObject({
  prefix: z.string().optional(),
  configMapRef: sourceRefSchema.optional(),
  secretRef: sourceRefSchema.optional(),
});
export type EnvFromSource = z.output<typeof envFromSchema>;

export const containerSchema = z.looseObject({
  name: z.string(),
  image: z.string().optional(),
  command: z.array(z.string()).optional(),
  args: z.array(z.string()).optional(),
  env: z.array(envVarSchema).optional(),
  envFrom: z.array(envFromSchema).optional(),
  ports: z.array(z.looseObject({ containerPort: z.number(), protocol: z.string().optional() })).optional(),
  resources: z
    .looseObject({ limits: resourceListSchema.optional(), requests: resourceListSchema.optional() })
    .optional(),
  securityContext: z.looseObject({ privileged: z.boolean().nullish() }).nullish(),
});
export type Container = z.output<typeof containerSchema>;

const volumeSchema = z.looseObject({
  name: z.string(),
  emptyDir: z.looseObject({}).optional(),
  projected: z.looseObject({ sources: z.array(z.record(z.string(), z.unknown())).nullish() }).optional(),
});
export type PodVolume = z.output<typeof volumeSchema>;

const conditionSchema = z.looseObject({
  type: z.string(),
  status: z.string(),
  reason: z.string().optional(),
  message: z.string().optional(),
  lastTransitionTime: z.string().nullish(),
});

export const containerStatusSchema = z.looseObject({
  name: z.string(),
  ready: z.boolean().optional(),
  restartCount: z.number().optional(),
  state: z.record(z.string(), z.unknown()).optional(),
});

export const nodePodSchema = z.looseObject({
  metadata: objectMetaSchema.extend({ uid: z.string() }),
  spec: z.looseObject({
    nodeName: z.string().optional(),
    serviceAccountName: z.string().optional(),
    restartPolicy: z.string().optional(),
    containers: z.array(containerSchema),
    initContainers: z.array(z.unknown()).nullish(),
    volumes: z.array(volumeSchema).nullish(),
    imagePullSecrets: z.array(z.looseObject({ name: z.string().optional() })).nullish(),
    nodeSelector: z.record(z.string(), z.string()).nullish(),
    hostNetwork: z.boolean().nullish(),
    hostPID: z.boolean().nullish(),
    hostIPC: z.boolean().nullish(),
  }),
  status: z
    .looseObject({
      phase: z.string().optional(),
      reason: z.string().optional(),
      message: z.string().optional(),
      startTime: z.string().optional(),
      hostIP: z.string().optional(),
      podIP: z.string().optional(),
      conditions: z.array(conditionSchema).nullish(),
      containerStatuses: z.array(containerStatusSchema).nullish(),
    })
    .optional(),
});
export type NodePodObject = z.output<typeof nodePodSchema>;
