import { z } from 'zod';
import { amount, usageOf } from '../common/usage.ts';
import { gpusPerWorker } from './gpus.ts';

const view = z.object({
  spec: z.looseObject({
    workers: z.number().optional(),
    resources: z.array(z.looseObject({ gpuType: z.string(), gpuCount: z.number() })).min(1),
  }),
  status: z
    .looseObject({
      phase: z.string().optional(),
      totalWorkers: z.number().optional(),
      runningWorkers: z.number().optional(),
      perHourPrice: z.string().optional(),
      cost: z.string().optional(),
      autoscaling: z.looseObject({ desiredWorkers: z.number() }).optional(),
      tasks: z.record(z.string(), z.number()).optional(),
    })
    .optional(),
});

/** Each running worker holds its resource's GPUs; the endpoint's price covers them all. */
export const serverlessEndpointUsage = usageOf(view, ({ spec, status }) => {
  const running = status?.phase === 'RUNNING' ? (status.runningWorkers ?? 0) : 0;
  const [first] = spec.resources;
  return {
    runningGpus: running * gpusPerWorker(spec.resources),
    gpuType: first?.gpuType,
    dollarsPerHour: status?.phase === 'RUNNING' ? amount(status.perHourPrice) : 0,
    dollarsSoFar: amount(status?.cost),
    workers: {
      desired: spec.workers ?? status?.autoscaling?.desiredWorkers ?? status?.totalWorkers ?? 0,
      running,
    },
    tasks: status?.tasks,
  };
});
