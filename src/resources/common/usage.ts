import type { z } from 'zod';
import type { FleetResource, Usage } from '../../managed/core/fleet-metrics.ts';

/** Nothing live, nothing spent: a resource whose spec or status does not read (yet). */
export const NO_USAGE: Usage = { runningGpus: 0, dollarsPerHour: 0, dollarsSoFar: 0 };

/**
 * A kind's usage function over the few fields it reads, parsed leniently: a scrape reads every resource,
 * so a small schema keeps it cheap, and a resource that does not fit costs nothing rather than the scrape.
 */
export function usageOf<T>(
  view: z.ZodType<T>,
  read: (resource: T) => Usage,
): (resource: FleetResource) => Usage {
  return (resource) => {
    const parsed = view.safeParse(resource);
    return parsed.success ? read(parsed.data) : NO_USAGE;
  };
}

/** A price or cost the cloud gives as a decimal string; 0 when absent or not a number. */
export function amount(text: string | undefined): number {
  const value = Number(text ?? 0);
  return Number.isFinite(value) ? value : 0;
}
