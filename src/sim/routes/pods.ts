import { operations } from '../../api/operations.ts';
import { searchGpus } from '../gpu-search.ts';
import { specFromV1, specFromV2 } from '../pods/spec.ts';
import { legacyPodView, podRuntimeView, podView } from '../pods/views.ts';
import type { Simulation } from '../simulation.ts';
import { type Route, route } from './route.ts';

export function podRoutes(sim: Simulation): Route[] {
  const { pods, ctx } = sim;
  const v2 = operations.pods;
  const v1 = operations.legacy.pods;
  return [
    route(v2.create, ({ caller, body }) => podView(pods.create(caller, specFromV2(body)), false)),
    route(v2.get, ({ caller, params }) => podView(pods.get(caller, params.id), true)),
    route(v2.list, ({ caller, query }) => pods.list(caller, query).map((pod) => podView(pod, true))),
    route(v2.delete, ({ caller, params }) => {
      pods.delete(caller, params.id);
      return null;
    }),
    route(v2.pause, ({ caller, params }) => {
      pods.pause(caller, params.id);
      return null;
    }),
    route(v2.resume, ({ caller, params }) => {
      pods.resume(caller, params.id);
      return null;
    }),
    route(v2.searchGpus, ({ body }) => searchGpus(body, ctx)),
    route(v2.logs, ({ caller, params, query }) => pods.logs(caller, params.id, query)),
    route(v2.runtime, ({ caller, params }) => podRuntimeView(pods.get(caller, params.id), ctx.clock.now())),

    route(v1.create, ({ caller, body }) => pods.create(caller, specFromV1(body)).id),
    route(v1.get, ({ caller, params }) => legacyPodView(pods.get(caller, params.podId))),
    route(v1.list, ({ caller }) => pods.list(caller, {}).map(legacyPodView)),
    route(v1.delete, ({ caller, params }) => {
      pods.delete(caller, params.podId);
      return null;
    }),
    route(v1.pause, ({ caller, params }) => {
      pods.pause(caller, params.podId);
      return null;
    }),
    route(v1.resume, ({ caller, params }) => {
      pods.resume(caller, params.podId);
      return null;
    }),
  ];
}
