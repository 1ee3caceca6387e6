import { allOperations } from '../../api/operations.ts';
import type { Simulation } from '../simulation.ts';
import { metricRoutes } from './metrics.ts';
import { podRoutes } from './pods.ts';
import type { Route } from './route.ts';
import { serverlessRoutes } from './serverless.ts';
import { vmRoutes } from './vms.ts';

/** A route for every operation of the API; throws if one is missing, so a new operation cannot go unserved. */
export function allRoutes(sim: Simulation): Route[] {
  const routes = [...vmRoutes(sim), ...podRoutes(sim), ...serverlessRoutes(sim), ...metricRoutes(sim)];
  const served = new Set(routes.map((r) => r.operation.name));
  const missing = allOperations
    .filter((operation) => !served.has(operation.name))
    .map((operation) => operation.name);
  if (missing.length > 0) throw new Error(`the simulator serves no route for: ${missing.join(', ')}`);
  return routes;
}
