import { z } from 'zod';
import { amount, usageOf } from '../common/usage.ts';

const view = z.object({
  status: z
    .looseObject({
      phase: z.string().optional(),
      gpuType: z.string().optional(),
      gpuCount: z.number().optional(),
      pricePerHour: z.string().optional(),
      estimatedCost: z.string().optional(),
    })
    .optional(),
});

/** A running VM holds its GPUs at its type's hourly price. */
export const gpuVmUsage = usageOf(view, ({ status }) => {
  const running = status?.phase === 'RUNNING';
  return {
    runningGpus: running ? (status?.gpuCount ?? 0) : 0,
    gpuType: status?.gpuType,
    dollarsPerHour: running ? amount(status?.pricePerHour) : 0,
    dollarsSoFar: amount(status?.estimatedCost),
  };
});
