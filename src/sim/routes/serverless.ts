import { ApiCode } from '../../api/codes.ts';
import { operations } from '../../api/operations.ts';
import { endpointSummaryView, endpointView, taskSummaryView, taskView } from '../serverless/views.ts';
import type { Simulation } from '../simulation.ts';
import { type Route, route } from './route.ts';

export function serverlessRoutes(sim: Simulation): Route[] {
  const { endpoints } = sim;
  const { tasks } = endpoints;
  const ops = operations.serverless;
  // Task calls name a missing endpoint with 14000; endpoint calls with 24001 (docs/design.md §4).
  const endpointOfTask = (caller: Parameters<typeof endpoints.get>[0], id: string) =>
    endpoints.get(caller, id, ApiCode.EndpointNotFound);
  return [
    route(ops.create, ({ caller, body }) => endpointView(endpoints.create(caller, body), endpoints)),
    route(ops.list, ({ caller, query }) =>
      endpoints.list(caller, query.statusList).map((endpoint) => endpointView(endpoint, endpoints)),
    ),
    route(ops.get, ({ caller, params }) => endpointSummaryView(endpoints.get(caller, params.id))),
    route(ops.update, ({ caller, params, body }) =>
      endpointSummaryView(endpoints.update(caller, params.id, body)),
    ),
    route(ops.delete, ({ caller, params }) => {
      endpoints.delete(caller, params.id);
      return null;
    }),
    route(ops.start, ({ caller, params }) => {
      endpoints.start(caller, params.id);
      return null;
    }),
    route(ops.stop, ({ caller, params }) => {
      endpoints.stop(caller, params.id);
      return null;
    }),
    route(ops.scaleWorkers, ({ caller, params, query }) => {
      endpoints.scale(caller, params.id, query.count);
      return null;
    }),

    route(ops.tasks.submit, ({ caller, params, body }) => ({
      taskId: tasks.submit(endpointOfTask(caller, params.id), body).taskId,
    })),
    route(ops.tasks.list, ({ caller, params, query }) => {
      const endpoint = endpointOfTask(caller, params.id);
      const page = tasks.list(endpoint, query);
      return { ...page, items: page.items.map((task) => taskSummaryView(endpoint, task)) };
    }),
    route(ops.tasks.count, ({ caller, params }) => tasks.counts(endpointOfTask(caller, params.id))),
    route(ops.tasks.get, ({ caller, params }) => {
      const endpoint = endpointOfTask(caller, params.id);
      return taskView(endpoint, tasks.get(endpoint, params.taskId));
    }),
  ];
}
