import { z } from 'zod';
import { amount, usageOf } from '../common/usage.ts';

const view = z.object({
  spec: z.looseObject({
    gpuType: z.string().optional(),
    gpuCount: z.number(),
    resourceType: z.string().optional(),
  }),
  status: z
    .looseObject({
      phase: z.string().optional(),
      gpuType: z.string().optional(),
      prices: z.looseObject({ singleCard: z.string().optional() }).optional(),
      estimatedCost: z.string().optional(),
    })
    .optional(),
});

/**
 * A running pod holds its GPUs and pays its card price for each; a paused one, or a CPU pod, holds none. Its
 * GPU type is the one it runs on (a placed pod's spec names none), else the spec's.
 */
export const gpuPodUsage = usageOf(view, ({ spec, status }) => {
  const running = status?.phase === 'RUNNING';
  return {
    runningGpus: running && spec.resourceType !== 'CPU' ? spec.gpuCount : 0,
    gpuType: status?.gpuType ?? spec.gpuType,
    dollarsPerHour: running ? amount(status?.prices?.singleCard) * spec.gpuCount : 0,
    dollarsSoFar: amount(status?.estimatedCost),
  };
});
